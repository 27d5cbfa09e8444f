// gradlane's data plane under test (priority_by_class.stf)
#include "../../../p4src/gradlane.p4"
