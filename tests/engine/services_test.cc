// Service profiles and service instances (issue 9) against a real gantryd running real exec
// scripts: a service deploys only onto a compute instance in Success (Waiting with reason
// ComputeNotReady until then, starting by itself), gets the compute instance's outputs as
// inputs, keeps its compute instance from being destroyed or deleted (409 HasServices) unless
// the request cascades (services destroyed first), runs on compute shared in from another
// project, and can auto-create its own compute instance.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

class ServicesTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    // Compute: the standard script (outputs endpoint http://NAME.example:8080).
    CreateStandardProfile("gpu-small", "compute-tmpl");
    // Services: the same script, as a service template.
    CreateExecTemplate("svc-tmpl", json::array{StandardScript()});
    CreateServiceProfile("jupyter");
  }

  // Service profile `name` on svc-tmpl in `ns`, with `extra` spec fields.
  json::object CreateServiceProfile(const std::string& name, json::object extra = {},
                                    const std::string& ns = "default") {
    json::object spec{{"displayName", "Jupyter"},
                      {"serviceType", "notebook"},
                      {"templateRef", json::object{{"name", "svc-tmpl"}}}};
    for (auto& kv : extra) spec[kv.key()] = kv.value();
    return api().MustCreate(
        NsPath(ns, "serviceprofiles"),
        json::object{{"metadata", json::object{{"name", name}}}, {"spec", std::move(spec)}});
  }
  json::object ServiceObject(const std::string& name, const std::string& profile,
                             json::object compute_ref) {
    json::object spec{{"profileRef", json::object{{"name", profile}}}};
    if (!compute_ref.empty()) spec["computeRef"] = std::move(compute_ref);
    return json::object{{"metadata", json::object{{"name", name}}}, {"spec", std::move(spec)}};
  }
  json::object CreateService(const std::string& name, const std::string& compute,
                             const std::string& ns = "default",
                             const std::string& compute_ns = "") {
    json::object ref{{"name", compute}};
    if (!compute_ns.empty()) ref["namespace"] = compute_ns;
    return api().MustCreate(NsPath(ns, "serviceinstances"), ServiceObject(name, "jupyter", ref));
  }
  Resp ServiceAction(const std::string& name, const std::string& action,
                     const std::string& ns = "default") {
    return api().Post(NsPath(ns, "serviceinstances", name) + "/" + action, json::object{});
  }
  json::object WaitService(const std::string& name,
                           const std::function<bool(const json::object&)>& pred,
                           const std::string& what, const std::string& ns = "default") {
    json::object last;
    bool ok = PollUntil([&] {
      Resp r = api().Get(NsPath(ns, "serviceinstances", name));
      last = r.status == 200 ? r.obj() : json::object{};
      return pred(last);
    });
    if (!ok)
      ADD_FAILURE() << "service " << ns << "/" << name << " never became " << what
                    << "; last seen: " << json::serialize(last) << "\ngantryd log:\n"
                    << gantryd_->Log();
    return last;
  }
  json::object WaitServicePhase(const std::string& name, const std::string& phase,
                                const std::string& ns = "default") {
    return WaitService(
        name, [&](const json::object& o) { return Str(o, "status.phase") == phase; }, phase, ns);
  }
  bool WaitServiceGone(const std::string& name, const std::string& ns = "default") {
    return PollUntil([&] { return api().Get(NsPath(ns, "serviceinstances", name)).status == 404; });
  }
  void DeployCompute(const std::string& name, const std::string& ns = "default") {
    ASSERT_EQ(Action(name, "deploy", ns).status, 202);
    WaitPhase(name, "Success", ns);
  }
  // A service deployed onto a compute instance deployed first.
  void DeployedPair(const std::string& compute, const std::string& service) {
    api().CreateInstance("default", compute, "gpu-small");
    DeployCompute(compute);
    CreateService(service, compute);
    ASSERT_EQ(ServiceAction(service, "deploy").status, 202);
    WaitServicePhase(service, "Success");
  }
};

TEST_F(ServicesTest, ServiceWaitsForComputeThenDeploysWithItsOutputs) {
  api().CreateInstance("default", "gpu", "gpu-small");
  CreateService("nb", "gpu");

  // Compute not deployed: the service waits, saying for what.
  Resp r = ServiceAction("nb", "deploy");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "kind"), "ServiceInstance");
  EXPECT_EQ(Str(r.obj(), "status.lastRunRef.name"), "nb-s1");
  json::object waiting = WaitService(
      "nb", [](const json::object& o) { return Str(o, "status.reason") == "ComputeNotReady"; },
      "Waiting with ComputeNotReady");
  EXPECT_EQ(Str(waiting, "status.phase"), "Waiting");
  EXPECT_EQ(Str(waiting, "status.message"),
            "waiting for compute instance gpu to be Success (it is Not Deployed); the service "
            "deploys as soon as it is");

  // The compute instance deploys (held In Progress): the service keeps waiting.
  std::string run = DeployBlocked("gpu");
  WaitService(
      "nb",
      [](const json::object& o) {
        return Str(o, "status.message").find("it is In Progress") != std::string::npos;
      },
      "waiting on the compute instance In Progress");
  EXPECT_FALSE(Exists("started-nb-s1"));

  // Ready: the service starts by itself and gets the compute instance's outputs.
  Touch("release-" + run);
  WaitPhase("gpu", "Success");
  json::object done = WaitServicePhase("nb", "Success");
  EXPECT_EQ(Str(done, "status.outputs.endpoint"), "http://nb.example:8080");
  std::string env = ReadFile(Path("env-nb-s1"));
  EXPECT_NE(env.find("GANTRY_COMPUTE_ENDPOINT=http://gpu.example:8080\n"), std::string::npos)
      << env;
  EXPECT_NE(env.find("GANTRY_COMPUTE_NAME=gpu\n"), std::string::npos) << env;
  EXPECT_NE(env.find("GANTRY_COMPUTE_PROJECT=default\n"), std::string::npos) << env;
  json::value input = json::parse(ReadFile(Path("stdin-nb-s1.json")));
  EXPECT_EQ(Str(input.as_object(), "compute.outputs.endpoint"), "http://gpu.example:8080");
  EXPECT_EQ(Str(input.as_object(), "instance.kind"), "ServiceInstance");

  // The run says what it ran for; the compute instance's runs are its own.
  json::object svc_run = GetRun("nb-s1");
  EXPECT_EQ(Str(svc_run, "spec.instanceRef.kind"), "ServiceInstance");
  EXPECT_EQ(Str(svc_run, "spec.instanceRef.name"), "nb");
  EXPECT_EQ(Str(GetRun(run), "spec.instanceRef.kind"), "ComputeInstance");
  Resp runs =
      api().Get(NsPath("default", "runs") + "?fieldSelector=spec.instanceRef.kind=ServiceInstance");
  ASSERT_EQ(runs.status, 200) << runs.raw;
  ASSERT_EQ(runs.obj().at("items").as_array().size(), 1u);
}

TEST_F(ServicesTest, ComputeWithServicesIsNotDestroyedOrDeletedWithoutCascade) {
  DeployedPair("gpu", "nb");
  CreateService("idle", "gpu");  // never deployed

  Resp destroy = Action("gpu", "destroy");
  EXPECT_TRUE(destroy.IsStatus(409, "HasServices")) << destroy.raw;
  // On the wire: a Kubernetes Conflict whose first cause names Gantry's reason.
  EXPECT_EQ(Str(destroy.obj(), "reason"), "Conflict") << destroy.raw;
  EXPECT_EQ(destroy.message(),
            "compute instance gpu cannot be destroyed: 1 service instance runs on it (nb "
            "(Success)); destroy them first, or destroy with ?cascade=true to destroy them "
            "first");
  Resp del = api().Delete(NsPath("default", "computeinstances", "gpu"));
  EXPECT_TRUE(del.IsStatus(409, "HasServices")) << del.raw;
  EXPECT_NE(del.message().find("2 service instances run on it (idle (Not Deployed), nb (Success))"),
            std::string::npos)
      << del.raw;
  EXPECT_EQ(Str(Get("gpu"), "status.phase"), "Success");

  // Background (kubectl's default) does not cascade either; a bad policy is a 400.
  Resp bg =
      api().Call("DELETE", NsPath("default", "computeinstances", "gpu"),
                 R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})");
  EXPECT_TRUE(bg.IsStatus(409, "HasServices")) << bg.raw;
  Resp bad =
      api().Delete(NsPath("default", "computeinstances", "gpu") + "?propagationPolicy=Later");
  EXPECT_EQ(bad.status, 400) << bad.raw;
  Resp bad_cascade = api().Post(
      NsPath("default", "computeinstances", "gpu") + "/destroy?cascade=yes", json::object{});
  EXPECT_EQ(bad_cascade.status, 400) << bad_cascade.raw;

  // Destroying the service frees the compute instance for a destroy (the idle one does not
  // hold it); a delete still needs the idle one gone.
  ASSERT_EQ(ServiceAction("nb", "destroy").status, 202);
  WaitServicePhase("nb", "NotDeployed");
  ASSERT_EQ(Action("gpu", "destroy").status, 202);
  WaitPhase("gpu", "NotDeployed");
  Resp del2 = api().Delete(NsPath("default", "computeinstances", "gpu"));
  EXPECT_TRUE(del2.IsStatus(409, "HasServices")) << del2.raw;
}

TEST_F(ServicesTest, CascadingDestroyDestroysServicesFirst) {
  DeployedPair("gpu", "nb");
  // The service's destroy is held: the compute instance's destroy waits for it.
  Touch("block-nb");
  Resp r = api().Post(NsPath("default", "computeinstances", "gpu") + "/destroy?cascade=true",
                      json::object{});
  ASSERT_EQ(r.status, 202) << r.raw;
  ASSERT_TRUE(WaitFile("started-nb-s2"));
  json::object waiting = WaitInstance(
      "gpu", [](const json::object& o) { return Str(o, "status.reason") == "ServicesRunning"; },
      "Waiting with ServicesRunning");
  EXPECT_EQ(Str(waiting, "status.message"),
            "waiting for 1 service instance to be destroyed first: nb (In Progress)");
  EXPECT_FALSE(Exists("started-gpu-2"));

  Touch("release-nb-s2");
  WaitServicePhase("nb", "NotDeployed");
  json::object gone = WaitPhase("gpu", "NotDeployed");
  // Order: the compute instance's destroy started after the service's had ended.
  json::object svc_destroy = GetRun("nb-s2");
  json::object compute_destroy = GetRun("gpu-2");
  EXPECT_EQ(Str(svc_destroy, "status.phase"), "Succeeded");
  EXPECT_LE(Str(svc_destroy, "status.completionTime"), Str(compute_destroy, "status.startTime"));
  EXPECT_EQ(Str(gone, "status.message"), "destroyed by run gpu-2");
}

TEST_F(ServicesTest, ForegroundDeleteRemovesServicesThenCompute) {
  DeployedPair("gpu", "nb");
  CreateService("idle", "gpu");
  Resp r =
      api().Call("DELETE", NsPath("default", "computeinstances", "gpu"),
                 R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"})");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_TRUE(WaitServiceGone("idle"));
  EXPECT_TRUE(WaitServiceGone("nb"));
  EXPECT_TRUE(WaitGone("gpu"));
  // Their runs went with them.
  Resp runs = api().Get(NsPath("default", "runs"));
  EXPECT_EQ(runs.obj().at("items").as_array().size(), 0u) << runs.raw;

  // Not deployed at all: the cascade removes everything at once (200).
  api().CreateInstance("default", "cold", "gpu-small");
  CreateService("cold-nb", "cold");
  Resp now =
      api().Delete(NsPath("default", "computeinstances", "cold") + "?propagationPolicy=Foreground");
  EXPECT_EQ(now.status, 200) << now.raw;
  EXPECT_EQ(api().Get(NsPath("default", "serviceinstances", "cold-nb")).status, 404);
}

TEST_F(ServicesTest, ServiceOnComputeSharedFromAnotherProject) {
  api().CreateProject("platform");
  api().CreateProject("team-b");
  api().CreateProject("team-c");
  CreateStandardProfile("gpu-small", "compute-tmpl", {}, "platform");
  api().CreateInstance("platform", "shared-gpu", "gpu-small");
  DeployCompute("shared-gpu", "platform");
  // The service profile lives in team-b; a member of team-b launches the service.
  CreateExecTemplate("svc-tmpl", json::array{StandardScript()}, {}, {}, "team-b");
  CreateServiceProfile("jupyter", {}, "team-b");
  api().MustCreate(ClusterPath("users"),
                   json::object{{"metadata", json::object{{"name", "bo"}}},
                                {"spec", json::object{{"password", "bo-password-1"}}}});
  api().MustCreate(NsPath("team-b", "rolebindings"),
                   json::object{{"metadata", json::object{{"name", "bo"}}},
                                {"spec", json::object{{"user", "bo"}, {"role", "member"}}}});
  Resp t = api().Post(ClusterPath("users", "bo") + "/tokens", json::object{});
  ASSERT_EQ(t.status, 201) << t.raw;
  Api bo(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));
  json::object service = ServiceObject(
      "nb", "jupyter", json::object{{"name", "shared-gpu"}, {"namespace", "platform"}});

  // Not shared yet: refused, naming why.
  Resp refused = bo.Post(NsPath("team-b", "serviceinstances"), service);
  EXPECT_TRUE(refused.IsStatus(422, "Invalid")) << refused.raw;
  EXPECT_NE(refused.message().find("computeinstance \"shared-gpu\" of project platform is not "
                                   "shared with project team-b"),
            std::string::npos)
      << refused.raw;

  ASSERT_EQ(
      api()
          .Patch(NsPath("platform", "computeinstances", "shared-gpu"),
                 json::object{
                     {"spec", json::object{{"sharing",
                                            json::object{{"mode", "Selected"},
                                                         {"projects", json::array{"team-b"}}}}}}})
          .status,
      200);
  Resp created = bo.Post(NsPath("team-b", "serviceinstances"), service);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(Str(created.obj(), "status.createdBy"), "bo");
  Resp deployed = bo.Post(NsPath("team-b", "serviceinstances", "nb") + "/deploy", json::object{});
  ASSERT_EQ(deployed.status, 202) << deployed.raw;
  json::object ok = WaitServicePhase("nb", "Success", "team-b");
  std::string env = ReadFile(Path("env-nb-s1"));
  EXPECT_NE(env.find("GANTRY_COMPUTE_PROJECT=platform\n"), std::string::npos) << env;
  // A member cannot destroy the shared compute instance; the platform's admin is told
  // that team-b's service runs on it.
  EXPECT_EQ(
      bo.Post(NsPath("platform", "computeinstances", "shared-gpu") + "/destroy", json::object{})
          .status,
      403);
  Resp blocked = Action("shared-gpu", "destroy", "platform");
  EXPECT_TRUE(blocked.IsStatus(409, "HasServices")) << blocked.raw;
  EXPECT_NE(blocked.message().find("team-b/nb (Success)"), std::string::npos) << blocked.raw;
  // Not shared with team-c: a team-c service cannot use it.
  CreateExecTemplate("svc-tmpl", json::array{StandardScript()}, {}, {}, "team-c");
  CreateServiceProfile("jupyter", {}, "team-c");
  Resp other = api().Post(NsPath("team-c", "serviceinstances"), service);
  EXPECT_TRUE(other.IsStatus(422, "Invalid")) << other.raw;
}

TEST_F(ServicesTest, ComputeSelectorLimitsWhichComputeAServiceRunsOn) {
  api().CreateProfile("default", "h100", "compute-tmpl", {}, json::object{{"gpu", "h100"}});
  api().CreateInstance("default", "big", "h100");
  api().CreateInstance("default", "small", "gpu-small");
  CreateServiceProfile(
      "ray", json::object{{"computeSelector",
                           json::object{{"matchLabels", json::object{{"gpu", "h100"}}}}}});
  Resp no = api().Post(NsPath("default", "serviceinstances"),
                       ServiceObject("r1", "ray", json::object{{"name", "small"}}));
  EXPECT_TRUE(no.IsStatus(422, "Invalid")) << no.raw;
  EXPECT_NE(no.message().find("spec.computeRef: compute instance small runs compute profile "
                              "gpu-small, which the service profile's computeSelector (gpu=h100) "
                              "does not select"),
            std::string::npos)
      << no.raw;
  Resp yes = api().Post(NsPath("default", "serviceinstances"),
                        ServiceObject("r1", "ray", json::object{{"name", "big"}}));
  EXPECT_EQ(yes.status, 201) << yes.raw;

  // Selector syntax is checked; a missing computeRef without auto-create is named.
  Resp bad = api().Post(
      NsPath("default", "serviceprofiles"),
      json::object{
          {"metadata", json::object{{"name", "bad"}}},
          {"spec",
           json::object{
               {"serviceType", "ray"},
               {"templateRef", json::object{{"name", "svc-tmpl"}}},
               {"computeSelector",
                json::object{{"matchExpressions",
                              json::array{json::object{{"key", "gpu"}, {"operator", "In"}}}}}}}}});
  EXPECT_TRUE(bad.IsStatus(422, "Invalid")) << bad.raw;
  EXPECT_NE(bad.message().find("spec.computeSelector.matchExpressions[0].values"),
            std::string::npos)
      << bad.raw;
  Resp none = api().Post(NsPath("default", "serviceinstances"), ServiceObject("r2", "ray", {}));
  EXPECT_TRUE(none.IsStatus(422, "Invalid")) << none.raw;
  EXPECT_NE(none.message().find("spec.computeRef.name: Required value"), std::string::npos)
      << none.raw;

  // Profiles and templates in use by services are not deleted from under them.
  Resp del_profile = api().Delete(NsPath("default", "serviceprofiles", "ray"));
  EXPECT_TRUE(del_profile.IsStatus(409, "InUse")) << del_profile.raw;
  Resp del_tmpl = api().Delete(NsPath("default", "environmenttemplates", "svc-tmpl"));
  EXPECT_TRUE(del_tmpl.IsStatus(409, "InUse")) << del_tmpl.raw;
  EXPECT_NE(del_tmpl.message().find("is used by 2 service profiles (ray, jupyter)"),
            std::string::npos)
      << del_tmpl.raw;
}

TEST_F(ServicesTest, AutoCreatedComputeDeploysWithTheServiceAndGoesWithIt) {
  CreateServiceProfile(
      "kubeflow",
      json::object{{"serviceType", "mlops"},
                   {"autoCreateCompute",
                    json::object{{"profileRef", json::object{{"name", "gpu-small"}}}}}});
  Resp created = api().Post(
      NsPath("default", "serviceinstances"),
      json::object{{"metadata", json::object{{"name", "mlops"}}},
                   {"spec", json::object{{"displayName", "MLOps"},
                                         {"profileRef", json::object{{"name", "kubeflow"}}}}}});
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(Str(created.obj(), "spec.computeRef.name"), "mlops-compute");
  EXPECT_EQ(At(created.obj(), "status.computeCreated"), json::value(true));
  json::object compute = Get("mlops-compute");
  EXPECT_EQ(compute.at("metadata").at("labels").at("paas.gantry.dev/service"),
            json::value("mlops"));
  EXPECT_EQ(Str(compute, "spec.displayName"), "MLOps (compute)");
  EXPECT_EQ(Str(compute, "status.phase"), "NotDeployed");

  // Sending the manifest again (without the computeRef the server set) changes nothing.
  Resp again = api().Put(
      NsPath("default", "serviceinstances", "mlops"),
      json::object{{"metadata", json::object{{"name", "mlops"}}},
                   {"spec", json::object{{"displayName", "MLOps"},
                                         {"profileRef", json::object{{"name", "kubeflow"}}}}}});
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(Str(again.obj(), "metadata.resourceVersion"),
            Str(created.obj(), "metadata.resourceVersion"));
  EXPECT_EQ(Str(again.obj(), "spec.computeRef.name"), "mlops-compute");

  // Deploying the service deploys its compute instance, then the service.
  ASSERT_EQ(ServiceAction("mlops", "deploy").status, 202);
  WaitPhase("mlops-compute", "Success");
  WaitServicePhase("mlops", "Success");

  // The compute instance is the service's: it cannot be deleted on its own...
  Resp del = api().Delete(NsPath("default", "computeinstances", "mlops-compute"));
  EXPECT_TRUE(del.IsStatus(409, "HasServices")) << del.raw;
  // ...and goes with the service (destroyed, then deleted).
  Resp del_svc = api().Delete(NsPath("default", "serviceinstances", "mlops"));
  EXPECT_EQ(del_svc.status, 202) << del_svc.raw;
  EXPECT_TRUE(WaitServiceGone("mlops"));
  EXPECT_TRUE(WaitGone("mlops-compute"));
  EXPECT_TRUE(Exists("started-mlops-compute-2"));  // its destroy ran

  // A name taken by another compute instance: refused before anything is created.
  api().CreateInstance("default", "taken-compute", "gpu-small");
  Resp clash = api().Post(
      NsPath("default", "serviceinstances"),
      json::object{{"metadata", json::object{{"name", "taken"}}},
                   {"spec", json::object{{"profileRef", json::object{{"name", "kubeflow"}}}}}});
  EXPECT_TRUE(clash.IsStatus(409, "AlreadyExists")) << clash.raw;
  EXPECT_EQ(api().Get(NsPath("default", "serviceinstances", "taken")).status, 404);
}

TEST_F(ServicesTest, DeployedServiceShowsWhetherItsComputeIsReady) {
  DeployedPair("gpu", "nb");
  json::object ok = WaitService(
      "nb",
      [](const json::object& o) { return Str(Condition(o, "ComputeReady"), "status") == "True"; },
      "ComputeReady True");
  EXPECT_EQ(Str(Condition(ok, "ComputeReady"), "reason"), "ComputeSucceeded");

  // The compute instance is redeployed and fails: the service, still deployed, says so.
  Touch("fail-gpu");
  ASSERT_EQ(Action("gpu", "deploy").status, 202);
  WaitPhase("gpu", "Failed");
  json::object broken = WaitService(
      "nb",
      [](const json::object& o) {
        return Str(Condition(o, "ComputeReady"), "reason") == "ComputeFailed";
      },
      "ComputeReady False with ComputeFailed");
  EXPECT_EQ(Str(broken, "status.phase"), "Success");
  json::object cond = Condition(broken, "ComputeReady");
  EXPECT_EQ(Str(cond, "status"), "False");
  EXPECT_EQ(Str(cond, "message")
                .rfind("compute instance gpu is Failed (DriverError): deploy run gpu-2 failed", 0),
            0u)
      << json::serialize(cond);

  // Repaired: ready again.
  std::filesystem::remove(Path("fail-gpu"));
  ASSERT_EQ(Action("gpu", "deploy").status, 202);
  WaitPhase("gpu", "Success");
  WaitService(
      "nb",
      [](const json::object& o) { return Str(Condition(o, "ComputeReady"), "status") == "True"; },
      "ComputeReady True again");
}

TEST_F(ServicesTest, ServiceLifecycleRulesMatchCompute) {
  DeployedPair("gpu", "nb");
  // The compute reference cannot move once deployed; neither can the profile.
  api().CreateInstance("default", "gpu2", "gpu-small");
  Resp move = api().Patch(
      NsPath("default", "serviceinstances", "nb"),
      json::object{{"spec", json::object{{"computeRef", json::object{{"name", "gpu2"}}}}}});
  EXPECT_TRUE(move.IsStatus(422, "Invalid")) << move.raw;
  EXPECT_NE(move.message().find("the compute instance can only be changed before the service is "
                                "first deployed"),
            std::string::npos)
      << move.raw;
  // Destroy while in progress: 409, as for compute.
  Touch("block-nb");
  ASSERT_EQ(ServiceAction("nb", "destroy").status, 202);
  ASSERT_TRUE(WaitFile("started-nb-s2"));
  WaitServicePhase("nb", "InProgress");
  Resp again = ServiceAction("nb", "destroy");
  EXPECT_EQ(again.status, 409) << again.raw;
  Resp del = api().Delete(NsPath("default", "serviceinstances", "nb"));
  EXPECT_EQ(del.status, 409) << del.raw;
  Touch("release-nb-s2");
  WaitServicePhase("nb", "NotDeployed");
  Resp del_ok = api().Delete(NsPath("default", "serviceinstances", "nb"));
  EXPECT_EQ(del_ok.status, 200) << del_ok.raw;
  EXPECT_TRUE(RunsOf("nb").empty());
  EXPECT_FALSE(RunsOf("gpu").empty());  // the compute instance's runs stay
}

}  // namespace
}  // namespace gantry::testing
