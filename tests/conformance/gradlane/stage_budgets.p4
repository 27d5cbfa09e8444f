// gradlane's data plane under test (stage_budgets.stf)
#include "../../../p4src/gradlane.p4"
