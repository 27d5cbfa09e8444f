// gradlane's data plane under test (critical_never_dropped.stf)
#include "../../../p4src/gradlane.p4"
