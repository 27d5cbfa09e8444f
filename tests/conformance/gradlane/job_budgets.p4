// gradlane's data plane under test (job_budgets.stf)
#include "../../../p4src/gradlane.p4"
