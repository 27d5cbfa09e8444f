// gradlane's data plane under test (pcn_per_job.stf)
#include "../../../p4src/gradlane.p4"
