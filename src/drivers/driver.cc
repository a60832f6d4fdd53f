#include "drivers/driver.h"

namespace gantry::drivers {

void DriverRegistry::Register(std::unique_ptr<Driver> driver) {
  std::string name(driver->Name());
  drivers_[name] = std::move(driver);
}

Driver* DriverRegistry::Find(std::string_view name) const {
  auto it = drivers_.find(name);
  return it == drivers_.end() ? nullptr : it->second.get();
}

}  // namespace gantry::drivers
