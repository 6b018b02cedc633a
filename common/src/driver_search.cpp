#include "cusnap/common/driver_search.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "cusnap/common/library_mark.h"

#ifndef CUSNAP_COMMON_BUILD_EMULATOR
#define CUSNAP_COMMON_BUILD_EMULATOR ""
#endif

namespace cusnap::common {

const char* const kBuildEmulatorPath = CUSNAP_COMMON_BUILD_EMULATOR;

namespace {

// A note segment larger than this is not read (NVIDIA's driver has a few hundred bytes of notes).
constexpr size_t kMaxNoteBytes = 64 * 1024;
constexpr size_t kMaxProgramHeaders = 256;

bool read_at(int fd, uint64_t offset, void* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n =
        ::pread(fd, static_cast<char*>(out) + done, size - done, static_cast<off_t>(offset + done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

size_t align_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The role a note segment declares, if it holds a cusnap note.
LibraryRole role_in_notes(const std::string& notes, size_t alignment) {
  size_t offset = 0;
  while (notes.size() - offset >= sizeof(Elf64_Nhdr)) {
    Elf64_Nhdr header;
    std::memcpy(&header, notes.data() + offset, sizeof header);
    size_t name_at = offset + sizeof header;
    if (header.n_namesz > notes.size() || header.n_descsz > notes.size()) break;
    size_t desc_at = name_at + align_up(header.n_namesz, alignment);
    size_t next = desc_at + align_up(header.n_descsz, alignment);
    if (desc_at > notes.size() || next > notes.size() || next <= offset) break;
    std::string_view name(notes.data() + name_at, header.n_namesz);
    std::string_view desc(notes.data() + desc_at, header.n_descsz);
    if (header.n_type == kLibraryNoteType && name == std::string_view(kLibraryNoteOwner, 7)) {
      if (desc == std::string_view(kInterceptorRole, std::strlen(kInterceptorRole) + 1)) {
        return LibraryRole::kInterceptor;
      }
      if (desc == std::string_view(kEmulatorRole, std::strlen(kEmulatorRole) + 1))
        return LibraryRole::kEmulator;
    }
    offset = next;
  }
  return LibraryRole::kOther;
}

LibraryRole role_of_fd(int fd) {
  Elf64_Ehdr header;
  if (!read_at(fd, 0, &header, sizeof header)) return LibraryRole::kOther;
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_phentsize != sizeof(Elf64_Phdr) ||
      header.e_phnum > kMaxProgramHeaders) {
    return LibraryRole::kOther;
  }
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (!read_at(fd, header.e_phoff + uint64_t{i} * sizeof segment, &segment, sizeof segment))
      break;
    if (segment.p_type != PT_NOTE || segment.p_filesz == 0 || segment.p_filesz > kMaxNoteBytes)
      continue;
    std::string notes(segment.p_filesz, '\0');
    if (!read_at(fd, segment.p_offset, notes.data(), notes.size())) continue;
    LibraryRole role = role_in_notes(notes, segment.p_align == 8 ? 8 : 4);
    if (role != LibraryRole::kOther) return role;
  }
  return LibraryRole::kOther;
}

// Why `path` cannot be a driver file ("" when it can): it must exist and be a regular file
// (after symbolic links).
std::string not_a_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::string("missing (") + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  return {};
}

std::string joined(const std::vector<std::string>& tried) {
  std::string out;
  for (const std::string& entry : tried) out += (out.empty() ? "" : "; ") + entry;
  return out.empty() ? "nothing" : out;
}

std::string parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string absolute(std::string_view path) {
  if (!path.empty() && path.front() == '/') return std::string(path);
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return std::string(path);
  std::string out = cwd;
  if (out.back() != '/') out += '/';
  return out + std::string(path);
}

// The emulator of the cusnap tree `self` belongs to (driver_search.h, emulator step 2).
std::vector<std::string> same_tree_emulators(const std::string& self) {
  std::vector<std::string> out;
  if (self.empty()) return out;
  std::string dir = parent(self);
  if (ends_with(dir, "/bin")) {
    std::string root = parent(dir);
    out.push_back(root + "/emulator/lib/libcuda.so.1");
    out.push_back(root + "/lib/cusnap/emulator/libcuda.so.1");
  } else if (ends_with(dir, "/lib/cusnap/interceptor")) {
    out.push_back(parent(dir) + "/emulator/libcuda.so.1");
  } else if (ends_with(dir, "/interceptor/lib")) {
    out.push_back(parent(parent(dir)) + "/emulator/lib/libcuda.so.1");
  }
  return out;
}

// <tree> of <tree>/emulator/lib/libcuda.so.1 (kBuildEmulatorPath's form), as a real path when
// it exists.
std::string build_tree_of(const std::string& build_emulator) {
  std::string tree = parent(parent(parent(build_emulator)));
  char* resolved = ::realpath(tree.c_str(), nullptr);
  if (resolved == nullptr) return tree;
  std::string out = resolved;
  std::free(resolved);
  return out;
}

// Whether `path` (a real path, as executable_path and library_path_of give) lies inside `tree`.
bool within(const std::string& path, const std::string& tree) {
  return !path.empty() && !tree.empty() && tree != "/" && path.size() > tree.size() + 1 &&
         path.compare(0, tree.size(), tree) == 0 && path[tree.size()] == '/';
}

const char* getenv_nonempty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

DriverSearch failure(const std::string& what, std::vector<std::string> tried) {
  DriverSearch out;
  out.error = what + "; tried: " + joined(tried);
  out.tried = std::move(tried);
  return out;
}

DriverSearch success(std::string path, std::string reason, LibraryRole role,
                     std::vector<std::string> tried) {
  DriverSearch out;
  out.path = std::move(path);
  out.reason = std::move(reason);
  out.role = role;
  out.tried = std::move(tried);
  return out;
}

}  // namespace

LibraryRole library_role(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return LibraryRole::kOther;
  LibraryRole role = role_of_fd(fd);
  ::close(fd);
  return role;
}

DriverSearch find_emulator(const DriverSearchOptions& options) {
  std::vector<std::string> tried;
  if (const char* env = getenv_nonempty(kEmulatorPathVariable)) {
    std::string path = absolute(env);
    std::string why = not_a_file(path);
    if (why.empty() && library_role(path) != LibraryRole::kEmulator)
      why = "not the cusnap emulator";
    if (!why.empty()) {
      tried.push_back(std::string(kEmulatorPathVariable) + "=" + path + ": " + why);
      return failure(std::string(kEmulatorPathVariable) + " does not name the cusnap emulator",
                     tried);
    }
    return success(path, "emulator", LibraryRole::kEmulator, tried);
  }
  tried.push_back(std::string(kEmulatorPathVariable) + ": unset");
  std::vector<std::string> candidates = same_tree_emulators(options.self);
  if (!options.build_emulator.empty()) {
    std::string tree = build_tree_of(options.build_emulator);
    if (within(options.self, tree)) {
      candidates.push_back(options.build_emulator);
    } else {
      tried.push_back(options.build_emulator + ": not used: " +
                      (options.self.empty() ? std::string("the searching program is unknown")
                                            : options.self + " is not in the build tree " + tree) +
                      " (an installed or copied cusnap never falls back to a build tree)");
    }
  }
  for (const std::string& candidate : candidates) {
    std::string why = not_a_file(candidate);
    if (why.empty() && library_role(candidate) != LibraryRole::kEmulator)
      why = "not the cusnap emulator";
    if (why.empty()) return success(candidate, "emulator", LibraryRole::kEmulator, tried);
    tried.push_back(candidate + ": " + why);
  }
  return failure("the cusnap emulator was not found (set " + std::string(kEmulatorPathVariable) +
                     " to its libcuda.so.1)",
                 tried);
}

DriverSearch find_interceptor(const std::string& self) {
  std::vector<std::string> tried;
  std::vector<std::string> candidates;
  if (const char* env = getenv_nonempty(kInterceptorDirVariable)) {
    candidates.push_back(absolute(env) + "/libcuda.so.1");
  } else {
    tried.push_back(std::string(kInterceptorDirVariable) + ": unset");
    std::string dir = parent(self);
    if (!self.empty() && ends_with(dir, "/bin")) {
      std::string root = parent(dir);
      candidates.push_back(root + "/interceptor/lib/libcuda.so.1");
      candidates.push_back(root + "/lib/cusnap/interceptor/libcuda.so.1");
    }
  }
  for (const std::string& candidate : candidates) {
    std::string why = not_a_file(candidate);
    if (why.empty() && library_role(candidate) != LibraryRole::kInterceptor)
      why = "not the cusnap interceptor";
    if (why.empty()) {
      char* resolved = ::realpath(candidate.c_str(), nullptr);
      std::string path = resolved != nullptr ? resolved : candidate;
      std::free(resolved);
      return success(path, "interceptor", LibraryRole::kInterceptor, tried);
    }
    tried.push_back(candidate + ": " + why);
  }
  return failure("the cusnap interceptor was not found (set " +
                     std::string(kInterceptorDirVariable) +
                     " to the directory of its libcuda.so.1)",
                 tried);
}

DriverSearch find_driver(std::string_view request, const DriverSearchOptions& options) {
  if (request == "emulator") {
    DriverSearch emulator = find_emulator(options);
    if (!emulator.ok()) emulator.error = "--driver emulator: " + emulator.error;
    return emulator;
  }
  if (request != "auto") {
    std::string path = absolute(request);
    std::string why = request.empty() ? "empty" : not_a_file(path);
    LibraryRole role = why.empty() ? library_role(path) : LibraryRole::kOther;
    if (role == LibraryRole::kInterceptor) why = "the cusnap interceptor, not a driver";
    if (!why.empty())
      return failure("--driver " + std::string(request) + ": no usable driver",
                     {path + ": " + why});
    return success(path, "given path", role, {});
  }

  std::vector<std::string> tried;
  if (const char* env = getenv_nonempty(kRealDriverVariable)) {
    std::string path = env;
    std::string why = path.front() != '/' ? "not an absolute path" : not_a_file(path);
    LibraryRole role = why.empty() ? library_role(path) : LibraryRole::kOther;
    if (role == LibraryRole::kInterceptor) why = "the cusnap interceptor, not a driver";
    if (!why.empty()) {
      tried.push_back(std::string(kRealDriverVariable) + "=" + path + ": " + why);
      return failure(
          "--driver auto: " + std::string(kRealDriverVariable) + " names no usable driver", tried);
    }
    return success(path, "auto: " + std::string(kRealDriverVariable), role, tried);
  }
  tried.push_back(std::string(kRealDriverVariable) + ": unset");

  for (const char* system_path : kSystemDriverPaths) {
    std::string candidate = options.system_root + system_path;
    std::string why = not_a_file(candidate);
    LibraryRole role = why.empty() ? library_role(candidate) : LibraryRole::kOther;
    if (role == LibraryRole::kInterceptor) why = "the cusnap interceptor, not a driver";
    std::string detail;
    if (why.empty() && options.probe && !options.probe(candidate, &detail)) why = detail;
    if (why.empty()) {
      std::string reason = "auto: system driver";
      if (options.probe) reason += " with " + detail;
      return success(candidate, reason, role, tried);
    }
    tried.push_back(candidate + ": " + why);
  }

  DriverSearch emulator = find_emulator(options);
  tried.insert(tried.end(), emulator.tried.begin(), emulator.tried.end());
  if (!emulator.ok()) {
    return failure("--driver auto: no usable NVIDIA driver and no cusnap emulator", tried);
  }
  return success(emulator.path, "auto: no usable system driver, using the emulator",
                 LibraryRole::kEmulator, tried);
}

std::string executable_path() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  return std::string(buffer, static_cast<size_t>(n));
}

std::string library_path_of(const void* address) {
  Dl_info info{};
  if (::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  char* resolved = ::realpath(info.dli_fname, nullptr);
  if (resolved == nullptr) return info.dli_fname;
  std::string path = resolved;
  std::free(resolved);
  return path;
}

}  // namespace cusnap::common
