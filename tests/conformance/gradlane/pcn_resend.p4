// gradlane's data plane under test (pcn_resend.stf)
#include "../../../p4src/gradlane.p4"
