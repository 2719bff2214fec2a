// gz_peer: a minimal stand-in for a running Gazebo world, speaking real Ignition Transport.
//
// It keeps a model -> link -> visual tree with parent-relative poses (as Gazebo's SceneBroadcaster
// does) and
//   publishes   /world/<w>/pose/info       Pose_V (models, links, visuals; parent-relative) at 50 Hz,
//                                          stamped with the simulated time (time since start)
//               /world/<w>/clock           Clock (sim = time since start), with every Pose_V
//               /world/<w>/scene/info      Scene with the subtree of each spawned model
//               /world/<w>/scene/deletion  UInt32_V with the ids of a deleted model's subtree
//   answers     /world/<w>/scene/info      Empty -> Scene (the whole tree)
//               /world/<w>/generate_world_sdf  SdfGeneratorConfig -> StringMsg (an SDF world)
//
// Commands, one per line on stdin (each answered by "ok <command>" on stdout):
//   move  <model> x y z roll pitch yaw        set a model's pose in the world
//   spawn <model> <id> x y z sx sy sz [v a d s]   add a box model (ids id, id+1, id+2); with v a d s
//                                            its visual carries <radarays_material> (velocity, ambient,
//                                            diffuse, specular) in generate_world_sdf only, as in Gazebo
//                                            (the Scene message has no custom SDF elements)
//   mesh  <model> <id> <uri> x y z            add a mesh model
//   delete <model>                            remove a model and announce its ids
//   dump <dir>                                write pose_v.bin and scene.bin (serialized messages)
//   swarm <n>                                 add n box models (ids 1000+3i) that drive circles
//   rate <hz>                                 pose/info publishing rate (default 50)
//   quit
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// Built twice (scripts/setup_gz_peer.sh): against Debian's Ignition Transport 11 / Msgs 8 and, with
// GZ_PEER_HARMONIC defined, against Gazebo Harmonic's gz-transport13 / gz-msgs10 (the same wire version;
// message type names "ignition.msgs.*" versus "gz.msgs.*").
#ifdef GZ_PEER_HARMONIC
#include <gz/msgs/boolean.pb.h>
#include <gz/msgs/clock.pb.h>
#include <gz/msgs/empty.pb.h>
#include <gz/msgs/pose_v.pb.h>
#include <gz/msgs/scene.pb.h>
#include <gz/msgs/sdf_generator_config.pb.h>
#include <gz/msgs/stringmsg.pb.h>
#include <gz/msgs/uint32_v.pb.h>
#include <gz/transport/Node.hh>
namespace msgs = gz::msgs;
namespace transport = gz::transport;
#else
#include <ignition/msgs/boolean.pb.h>
#include <ignition/msgs/clock.pb.h>
#include <ignition/msgs/empty.pb.h>
#include <ignition/msgs/pose_v.pb.h>
#include <ignition/msgs/scene.pb.h>
#include <ignition/msgs/sdf_generator_config.pb.h>
#include <ignition/msgs/stringmsg.pb.h>
#include <ignition/msgs/uint32_v.pb.h>
#include <ignition/transport/Node.hh>

namespace msgs = ignition::msgs;
namespace transport = ignition::transport;
#endif

struct Frame {  // a pose relative to the parent entity
  double x = 0, y = 0, z = 0, roll = 0, pitch = 0, yaw = 0;
};

struct PeerModel {
  std::string name;
  unsigned id = 0;  // model id; its link is id+1, its visual id+2
  bool is_static = false;
  Frame pose, link_pose, visual_pose;
  std::string link = "link", visual = "visual";
  std::string mesh_uri;  // empty: a box of size sx sy sz
  double sx = 1, sy = 1, sz = 1;
  bool tagged = false;  // <radarays_material> in the model's SDF
  double velocity = 0, ambient = 0, diffuse = 0, specular = 0;
};

static void SetPose(msgs::Pose *p, const std::string &name, unsigned id, const Frame &f) {
  p->set_name(name);
  p->set_id(id);
  p->mutable_position()->set_x(f.x);
  p->mutable_position()->set_y(f.y);
  p->mutable_position()->set_z(f.z);
  // Quaternion of R = Rz(yaw) Ry(pitch) Rx(roll).
  double cr = std::cos(f.roll / 2), sr = std::sin(f.roll / 2);
  double cp = std::cos(f.pitch / 2), sp = std::sin(f.pitch / 2);
  double cy = std::cos(f.yaw / 2), sy = std::sin(f.yaw / 2);
  auto *q = p->mutable_orientation();
  q->set_w(cr * cp * cy + sr * sp * sy);
  q->set_x(sr * cp * cy - cr * sp * sy);
  q->set_y(cr * sp * cy + sr * cp * sy);
  q->set_z(cr * cp * sy - sr * sp * cy);
}

class Peer {
 public:
  explicit Peer(const std::string &world) : world_(world) {
    PeerModel ground;
    ground.name = "ground"; ground.id = 10; ground.is_static = true;
    ground.pose.z = -0.05; ground.sx = 40; ground.sy = 40; ground.sz = 0.1;
    models_.push_back(ground);
    PeerModel box;
    box.name = "box"; box.id = 20; box.pose.x = 5; box.pose.z = 0.5;
    models_.push_back(box);
    // A model whose visual sits under a rotated model and an offset link: tests composition.
    PeerModel arm;
    arm.name = "arm"; arm.id = 30; arm.pose.y = 5; arm.pose.yaw = 1.5707963267948966;
    arm.link = "upper"; arm.link_pose.x = 1; arm.visual = "shell"; arm.visual_pose.z = 0.5;
    arm.sx = arm.sy = arm.sz = 0.4;
    models_.push_back(arm);

    std::string prefix = "/world/" + world_;
    pose_pub_ = node_.Advertise<msgs::Pose_V>(prefix + "/pose/info");
    clock_pub_ = node_.Advertise<msgs::Clock>(prefix + "/clock");
    scene_pub_ = node_.Advertise<msgs::Scene>(prefix + "/scene/info");
    deletion_pub_ = node_.Advertise<msgs::UInt32_V>(prefix + "/scene/deletion");
    node_.Advertise(prefix + "/scene/info", &Peer::OnSceneInfo, this);
    node_.Advertise(prefix + "/generate_world_sdf", &Peer::OnGenerateSdf, this);
  }

  void Run() {
    std::thread publisher([this] {
      auto next = std::chrono::steady_clock::now();
      while (running_) {
        Drive();
        auto sim = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
        msgs::Pose_V poses = PoseV();
        poses.mutable_header()->mutable_stamp()->set_sec(sim.count() / 1000000000);
        poses.mutable_header()->mutable_stamp()->set_nsec(sim.count() % 1000000000);
        pose_pub_.Publish(poses);
        msgs::Clock clock;
        *clock.mutable_sim() = poses.header().stamp();
        clock_pub_.Publish(clock);
        next += std::chrono::microseconds(static_cast<int64_t>(1e6 / rate_hz_.load()));
        std::this_thread::sleep_until(next);
      }
    });
    std::cout << "ready" << std::endl;
    std::string line;
    while (running_ && std::getline(std::cin, line)) {
      Handle(line);
      std::cout << "ok " << line << std::endl;
    }
    running_ = false;
    publisher.join();
  }

 private:
  void Drive() {  // swarm models drive 1 m circles, ~0.5 rad/s
    std::lock_guard<std::mutex> lock(mutex_);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    for (auto &m : models_) {
      if (m.id < 1000) continue;
      int i = static_cast<int>((m.id - 1000) / 3);
      double angle = 0.5 * t + i;
      m.pose.x = (i % 10) * 3.0 + std::cos(angle);
      m.pose.y = (i / 10) * 3.0 + std::sin(angle);
      m.pose.yaw = angle;
    }
  }

  msgs::Pose_V PoseV() {
    std::lock_guard<std::mutex> lock(mutex_);
    msgs::Pose_V out;
    for (const auto &m : models_) {
      SetPose(out.add_pose(), m.name, m.id, m.pose);
      SetPose(out.add_pose(), m.link, m.id + 1, m.link_pose);
      SetPose(out.add_pose(), m.visual, m.id + 2, m.visual_pose);
    }
    return out;
  }

  void FillModel(msgs::Model *out, const PeerModel &m) {
    out->set_name(m.name);
    out->set_id(m.id);
    out->set_is_static(m.is_static);
    SetPose(out->mutable_pose(), m.name, m.id, m.pose);
    auto *link = out->add_link();
    link->set_name(m.link);
    link->set_id(m.id + 1);
    SetPose(link->mutable_pose(), m.link, m.id + 1, m.link_pose);
    auto *visual = link->add_visual();
    visual->set_name(m.visual);
    visual->set_id(m.id + 2);
    visual->set_parent_name(m.name + "::" + m.link);
    visual->set_parent_id(m.id + 1);
    SetPose(visual->mutable_pose(), m.visual, m.id + 2, m.visual_pose);
    auto *geom = visual->mutable_geometry();
    if (m.mesh_uri.empty()) {
      geom->set_type(msgs::Geometry::BOX);
      auto *size = geom->mutable_box()->mutable_size();
      size->set_x(m.sx); size->set_y(m.sy); size->set_z(m.sz);
    } else {
      geom->set_type(msgs::Geometry::MESH);
      geom->mutable_mesh()->set_filename(m.mesh_uri);
      auto *scale = geom->mutable_mesh()->mutable_scale();
      scale->set_x(1); scale->set_y(1); scale->set_z(1);
    }
  }

  msgs::Scene WholeScene() {
    std::lock_guard<std::mutex> lock(mutex_);
    msgs::Scene scene;
    scene.set_name(world_);
    for (const auto &m : models_) FillModel(scene.add_model(), m);
    return scene;
  }

  bool OnSceneInfo(const msgs::Empty &, msgs::Scene &rep) {
    rep = WholeScene();
    return true;
  }

  static std::string PoseText(const Frame &f) {
    std::ostringstream s;
    s << f.x << " " << f.y << " " << f.z << " " << f.roll << " " << f.pitch << " " << f.yaw;
    return s.str();
  }

  bool OnGenerateSdf(const msgs::SdfGeneratorConfig &, msgs::StringMsg &rep) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::ostringstream s;
    s << "<?xml version=\"1.0\"?>\n<sdf version=\"1.11\">\n<world name=\"" << world_ << "\">\n";
    for (const auto &m : models_) {
      s << "<model name=\"" << m.name << "\"><static>" << (m.is_static ? "true" : "false")
        << "</static><pose>" << PoseText(m.pose) << "</pose>"
        << "<link name=\"" << m.link << "\"><pose>" << PoseText(m.link_pose) << "</pose>"
        << "<visual name=\"" << m.visual << "\"><pose>" << PoseText(m.visual_pose) << "</pose><geometry>";
      if (m.mesh_uri.empty())
        s << "<box><size>" << m.sx << " " << m.sy << " " << m.sz << "</size></box>";
      else
        s << "<mesh><uri>" << m.mesh_uri << "</uri></mesh>";
      s << "</geometry>";
      if (m.tagged)
        s << "<radarays_material><velocity>" << m.velocity << "</velocity><ambient>" << m.ambient
          << "</ambient><diffuse>" << m.diffuse << "</diffuse><specular>" << m.specular
          << "</specular></radarays_material>";
      s << "</visual></link></model>\n";
    }
    s << "</world>\n</sdf>\n";
    rep.set_data(s.str());
    return true;
  }

  void Handle(const std::string &line) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "move") {
      std::string name; Frame f;
      in >> name >> f.x >> f.y >> f.z >> f.roll >> f.pitch >> f.yaw;
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto &m : models_) if (m.name == name) m.pose = f;
    } else if (cmd == "spawn" || cmd == "mesh") {
      PeerModel m;
      in >> m.name >> m.id;
      if (cmd == "mesh") in >> m.mesh_uri;
      in >> m.pose.x >> m.pose.y >> m.pose.z;
      if (cmd == "spawn") in >> m.sx >> m.sy >> m.sz;
      if (cmd == "spawn" && (in >> m.velocity >> m.ambient >> m.diffuse >> m.specular)) m.tagged = true;
      msgs::Scene added;
      added.set_name(world_);
      FillModel(added.add_model(), m);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        models_.push_back(m);
      }
      scene_pub_.Publish(added);
    } else if (cmd == "delete") {
      std::string name;
      in >> name;
      msgs::UInt32_V ids;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = models_.begin(); it != models_.end(); ++it) {
          if (it->name != name) continue;
          ids.add_data(it->id); ids.add_data(it->id + 1); ids.add_data(it->id + 2);
          models_.erase(it);
          break;
        }
      }
      deletion_pub_.Publish(ids);
    } else if (cmd == "dump") {
      std::string dir;
      in >> dir;
      std::string bytes;
      PoseV().SerializeToString(&bytes);
      std::ofstream(dir + "/pose_v.bin", std::ios::binary) << bytes;
      WholeScene().SerializeToString(&bytes);
      std::ofstream(dir + "/scene.bin", std::ios::binary) << bytes;
      msgs::UInt32_V ids; ids.add_data(20); ids.add_data(21); ids.add_data(22);
      ids.SerializeToString(&bytes);
      std::ofstream(dir + "/deletion.bin", std::ios::binary) << bytes;
    } else if (cmd == "swarm") {
      int n = 0;
      in >> n;
      std::lock_guard<std::mutex> lock(mutex_);
      for (int i = 0; i < n; ++i) {
        PeerModel m;
        m.name = "mover_" + std::to_string(i);
        m.id = 1000 + 3 * i;
        m.pose.z = 0.5;
        models_.push_back(m);
      }
    } else if (cmd == "rate") {
      double hz = 50;
      in >> hz;
      if (hz > 0) rate_hz_ = hz;
    } else if (cmd == "quit") {
      running_ = false;
    }
  }

  std::string world_;
  std::vector<PeerModel> models_;
  std::mutex mutex_;
  std::atomic<bool> running_{true};
  std::atomic<double> rate_hz_{50.0};
  transport::Node node_;
  transport::Node::Publisher pose_pub_, clock_pub_, scene_pub_, deletion_pub_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int main(int argc, char **argv) {
  std::string world = argc > 1 ? argv[1] : "peer_world";
  Peer peer(world);
  peer.Run();
  return 0;
}
