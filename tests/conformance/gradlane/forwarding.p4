// gradlane's data plane under test (forwarding.stf)
#include "../../../p4src/gradlane.p4"
