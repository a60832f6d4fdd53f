// The OpenAPI v3 documents of the API, generated from the kind schemas (model/schema.h) so
// the document, the validation and the UI's generated types cannot drift apart. The
// configuration of each driver (an EnvironmentTemplate's spec.<driver>) is described by the
// driver itself (Driver::ConfigSchema) where it publishes a schema.
#pragma once

#include <boost/json.hpp>

#include "drivers/driver.h"

namespace gantry::api {

// GET /openapi/v3: {"paths": {"apis/paas.gantry.dev/v1": {"serverRelativeURL": ...}}}
boost::json::object OpenApiIndex();
// GET /openapi/v3/apis/paas.gantry.dev/v1
boost::json::object OpenApiGroupDocument(const drivers::DriverRegistry& drivers);
// GET /apis, /apis/paas.gantry.dev, /apis/paas.gantry.dev/v1 (Kubernetes discovery)
boost::json::object ApiGroupList();
boost::json::object ApiGroup();
boost::json::object ApiResourceList();

}  // namespace gantry::api
