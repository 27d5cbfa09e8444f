// gradlane's data plane under test (pcn_ddl_flow.stf)
#include "../../../p4src/gradlane.p4"
