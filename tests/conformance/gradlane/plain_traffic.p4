// gradlane's data plane under test (plain_traffic.stf)
#include "../../../p4src/gradlane.p4"
