// Prints the launch count of a capture, the kernel of its first launch and the size of the first
// code image loaded (as cusnap::fatbin measures it), through the installed cusnap libraries.
#include <cstdio>
#include <string>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/format/reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: launch_count FILE.cusnap\n");
    return 1;
  }
  auto opened = cusnap::format::Reader::open(argv[1]);
  if (!opened) {
    std::fprintf(stderr, "launch_count: %s\n", opened.status().to_string().c_str());
    return 1;
  }
  cusnap::format::Reader& reader = *opened.value();
  std::printf("launches %zu\n", reader.launches().size());
  if (!reader.launches().empty()) {
    auto call = reader.launch(0);
    if (!call) {
      std::fprintf(stderr, "launch_count: %s\n", call.status().to_string().c_str());
      return 1;
    }
    std::printf("first kernel %s\n", call->get().getLaunch().getKernelName().cStr());
  }
  cusnap::format::Status walked = reader.for_each_call([&](const cusnap::format::CallRef& ref) {
    auto record = ref.get();
    if (!record.isModuleLoad()) return true;
    auto image = record.getModuleLoad().getImage();
    auto bytes = reader.read_blob(cusnap::format::BlobId{image.getHigh(), image.getLow()});
    if (bytes && !bytes->empty())
      std::printf("first image %zu bytes, measured %llu\n", bytes->size(),
                  static_cast<unsigned long long>(cusnap::fatbin::image_size(bytes->data())));
    return false;
  });
  if (!walked) {
    std::fprintf(stderr, "launch_count: %s\n", walked.to_string().c_str());
    return 1;
  }
  return 0;
}
