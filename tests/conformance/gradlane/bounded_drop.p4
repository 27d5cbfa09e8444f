// gradlane's data plane under test (bounded_drop.stf)
#include "../../../p4src/gradlane.p4"
