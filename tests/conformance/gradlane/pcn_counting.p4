// gradlane's data plane under test (pcn_counting.stf)
#include "../../../p4src/gradlane.p4"
