// gradlane's data plane under test (job_features.stf)
#include "../../../p4src/gradlane.p4"
