// gradlane's data plane under test (ipv4_checksum.stf)
#include "../../../p4src/gradlane.p4"
