"""gradlane controller: P4Runtime control of every switch, loss-tolerance policies, `gradctl`."""
