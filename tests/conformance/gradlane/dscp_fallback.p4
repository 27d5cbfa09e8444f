// gradlane's data plane under test (dscp_fallback.stf)
#include "../../../p4src/gradlane.p4"
