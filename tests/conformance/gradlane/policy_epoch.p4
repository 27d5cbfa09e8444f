// gradlane's data plane under test (policy_epoch.stf)
#include "../../../p4src/gradlane.p4"
