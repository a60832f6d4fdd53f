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

void DriverRegistry::SetObserver(WorkloadObserver* observer) {
  for (auto& [name, d] : drivers_) d->SetObserver(observer);
}

void DriverRegistry::Shutdown() {
  for (auto& [name, d] : drivers_) d->Shutdown();
}

}  // namespace gantry::drivers
