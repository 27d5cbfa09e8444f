import sys

from p4target.cli import main

sys.exit(main())
