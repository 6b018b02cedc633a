#include "driver/link_inputs.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "cusnap/fatbin/fatbin.h"
#include "driver/ptx_selection.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

namespace fb = cusnap::fatbin;

template <class T>
T read_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p,
              sizeof v);  // ELF64 little endian, the only kind a Linux x86-64/arm64 host makes
  return v;
}

// The contents of the first section named one of `names` in a 64-bit little-endian ELF object.
bool elf_section(const uint8_t* d, size_t n, std::initializer_list<const char*> names,
                 const uint8_t** section, size_t* section_size) {
  if (n < 64 ||
      std::memcmp(d,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      d[4] != 2 || d[5] != 1)
    return false;
  const uint64_t shoff = read_le<uint64_t>(d + 0x28);
  const uint16_t shentsize = read_le<uint16_t>(d + 0x3a), shnum = read_le<uint16_t>(d + 0x3c);
  const uint16_t shstrndx = read_le<uint16_t>(d + 0x3e);
  if (shentsize < 64 || shstrndx >= shnum || shoff > n || uint64_t{shnum} * shentsize > n - shoff)
    return false;
  auto header = [&](uint16_t i) { return d + shoff + uint64_t{i} * shentsize; };
  const uint64_t strtab = read_le<uint64_t>(header(shstrndx) + 24),
                 strsize = read_le<uint64_t>(header(shstrndx) + 32);
  if (strtab > n || strsize > n - strtab) return false;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* h = header(i);
    const uint32_t name = read_le<uint32_t>(h);
    const uint64_t offset = read_le<uint64_t>(h + 24), size = read_le<uint64_t>(h + 32);
    if (name >= strsize || offset > n || size > n - offset) continue;
    const char* section_name = reinterpret_cast<const char*>(d + strtab + name);
    const size_t max = strsize - name;
    for (const char* wanted : names) {
      if (strnlen(section_name, max) == std::strlen(wanted) &&
          std::strcmp(section_name, wanted) == 0) {
        *section = d + offset;
        *section_size = size;
        return true;
      }
    }
  }
  return false;
}

struct Member {
  std::string name;
  const uint8_t* data;
  size_t size;
};

// The members of an `ar` archive (GNU and BSD name conventions), symbol tables skipped.
bool ar_members(const uint8_t* d, size_t n, std::vector<Member>* out, std::string* error) {
  std::string long_names;
  size_t at = 8;
  while (at + 60 <= n) {
    const char* h = reinterpret_cast<const char*>(d + at);
    if (h[58] != '`' || h[59] != '\n') {
      *error = "malformed member header at offset " + std::to_string(at);
      return false;
    }
    std::string name(h, 16);
    const size_t size = std::strtoull(std::string(h + 48, 10).c_str(), nullptr, 10);
    size_t data = at + 60;
    if (size > n - data) {
      *error = "member at offset " + std::to_string(at) + " runs past the end of the archive";
      return false;
    }
    size_t data_size = size;
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.rfind("#1/", 0) == 0) {  // BSD: the name precedes the data
      const size_t length = std::strtoull(name.c_str() + 3, nullptr, 10);
      if (length > data_size) {
        *error = "malformed BSD member name at offset " + std::to_string(at);
        return false;
      }
      name.assign(reinterpret_cast<const char*>(d + data), length);
      name.resize(strnlen(name.c_str(), name.size()));
      data += length;
      data_size -= length;
    }
    const size_t next = at + 60 + size + (size & 1);
    if (name == "/" || name == "/SYM64/" || name.rfind("__.SYMDEF", 0) == 0) {
      at = next;  // symbol tables
      continue;
    }
    if (name == "//") {  // GNU long names
      long_names.assign(reinterpret_cast<const char*>(d + data), data_size);
      at = next;
      continue;
    }
    if (name.size() > 1 && name[0] == '/' && std::isdigit(static_cast<unsigned char>(name[1]))) {
      const size_t offset = std::strtoull(name.c_str() + 1, nullptr, 10);
      const size_t end =
          offset < long_names.size() ? long_names.find('\n', offset) : std::string::npos;
      if (end == std::string::npos) {
        *error = "member name " + name + " is not in the archive's name table";
        return false;
      }
      name = long_names.substr(offset, end - offset);
    }
    if (!name.empty() && name.back() == '/') name.pop_back();
    out->push_back(Member{name, d + data, data_size});
    at = next;
  }
  return true;
}

CUresult add_fatbin(const void* image, const std::string& name, std::vector<LinkInput>* out,
                    std::string* error) {
  PtxSelection selection = select_ptx(image, static_cast<uint32_t>(device_config().sm));
  if (selection.sass_only) {
    *error =
        "'" + name + "' has no PTX (the emulator runs PTX, never machine code): " + selection.error;
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (!selection.error.empty()) {
    *error = "'" + name + "': " + selection.error;
    return selection.error.find("newer architecture") != std::string::npos
               ? CUDA_ERROR_NO_BINARY_FOR_GPU
               : CUDA_ERROR_INVALID_IMAGE;
  }
  out->push_back(LinkInput{name, std::move(selection.ptx)});
  return CUDA_SUCCESS;
}

// What an archive member is, by its contents (archives say nothing else about their members).
CUjitInputType member_type(const Member& m, bool* known) {
  *known = true;
  if (m.size >= 4 && std::memcmp(m.data,
                                 "\x7f"
                                 "ELF",
                                 4) == 0)
    return CU_JIT_INPUT_OBJECT;
  if (m.size >= 8) {
    const fb::ImageKind kind = fb::classify(m.data);
    if (kind == fb::ImageKind::kContainer || kind == fb::ImageKind::kWrapper)
      return CU_JIT_INPUT_FATBINARY;
  }
  const std::string head(reinterpret_cast<const char*>(m.data), std::min<size_t>(m.size, 4096));
  if (head.find(".version") != std::string::npos && head.find('\0') == std::string::npos)
    return CU_JIT_INPUT_PTX;
  *known = false;
  return CU_JIT_INPUT_CUBIN;
}

}  // namespace

bool is_ar_archive(const void* image, size_t size) {
  return image != nullptr && size >= 8 && std::memcmp(image, "!<arch>\n", 8) == 0;
}

CUresult add_link_input(CUjitInputType type, const void* data, size_t size, const std::string& name,
                        std::vector<LinkInput>* out, std::string* error) {
  if (data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto* bytes = static_cast<const uint8_t*>(data);
  switch (type) {
    case CU_JIT_INPUT_PTX: {
      std::string text(static_cast<const char*>(data), size);
      text.resize(strnlen(text.c_str(), text.size()));
      out->push_back(LinkInput{name, std::move(text)});
      return CUDA_SUCCESS;
    }
    case CU_JIT_INPUT_FATBINARY:
      return add_fatbin(data, name, out, error);
    case CU_JIT_INPUT_OBJECT: {
      const uint8_t* section = nullptr;
      size_t section_size = 0;
      if (!elf_section(bytes, size, {".nv_fatbin", "__nv_relfatbin"}, &section, &section_size) ||
          section_size < 16) {
        *error =
            "'" + name +
            "' is not a host object with device code (no .nv_fatbin or __nv_relfatbin section)";
        return CUDA_ERROR_INVALID_IMAGE;
      }
      return add_fatbin(section, name, out, error);
    }
    case CU_JIT_INPUT_LIBRARY: {
      if (!is_ar_archive(data, size)) {
        *error = "'" + name + "' is not an ar archive (static library)";
        return CUDA_ERROR_INVALID_IMAGE;
      }
      std::vector<Member> members;
      if (!ar_members(bytes, size, &members, error)) {
        *error = "'" + name + "': " + *error;
        return CUDA_ERROR_INVALID_IMAGE;
      }
      for (const Member& m : members) {
        const std::string member_name = name + "(" + m.name + ")";
        bool known = false;
        const CUjitInputType member = member_type(m, &known);
        if (!known) {
          *error = "member '" + member_name +
                   "' is neither PTX, a fatbin nor a host object with device code";
          return CUDA_ERROR_INVALID_IMAGE;
        }
        if (CUresult r = add_link_input(member, m.data, m.size, member_name, out, error);
            r != CUDA_SUCCESS)
          return r;
      }
      return CUDA_SUCCESS;
    }
    case CU_JIT_INPUT_CUBIN:
      *error =
          "'" + name +
          "' is a cubin (machine code); the emulator runs PTX: link a fatbin with PTX, or PTX text";
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    case CU_JIT_INPUT_NVVM:
      *error = "'" + name +
               "' is LTO IR (NVVM); linking it needs libNVVM, which the emulator does not have";
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace cusnap::emu::driver
