// Parser: module facts and errors with line numbers on malformed PTX.
#include <cctype>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

const char* kHeader = ".version 8.5\n.target sm_80\n.address_size 64\n";

std::string error_of(const std::string& text) {
  CompileResult r = compile(text);
  REQUIRE(r.program == nullptr);
  return r.error;
}

}  // namespace

TEST_CASE("module facts: version, target, kernels, parameters, variables", "[ptx][parser]") {
  std::string text =
      std::string(kHeader) +
      ".global .align 8 .b8 blob[24] = {1, 2, 3};\n"
      ".const .align 4 .f32 k[2] = {0f3F800000, 2.5};\n"
      ".extern .global .align 4 .u32 ext;\n"
      ".visible .entry kern(.param .u8 a, .param .u64 b, .param .align 16 .b8 c[20], .param .u16 "
      "d)\n"
      ".maxntid 128, 1, 1\n"
      "{ .shared .align 4 .b8 s[100]; .local .align 8 .b8 depot[40]; .reg .b32 %r<3>;\n"
      "  mov.u32 %r1, s; ret; }\n";
  auto p = compile_or_fail(text);
  CHECK(p->ptx_version() == 85);
  CHECK(p->target_sm() == 80);
  REQUIRE(p->kernels().size() == 1);
  const KernelDesc& kd = p->kernels()[0];
  CHECK(kd.name == "kern");
  REQUIRE(kd.params.size() == 4);
  CHECK(kd.params[0].offset == 0);
  CHECK(kd.params[1].offset == 8);
  CHECK(kd.params[2].offset == 16);
  CHECK(kd.params[2].size == 20);
  CHECK(kd.params[3].offset == 36);
  CHECK(kd.param_bytes == 38);
  CHECK(kd.max_threads_per_block == 128);
  CHECK(kd.static_shared_bytes == 100);
  CHECK(kd.local_bytes_per_thread >= 40);
  REQUIRE(p->variables().size() == 3);
  int blob = p->find_variable("blob");
  REQUIRE(blob >= 0);
  CHECK(p->variables()[blob].size == 24);
  CHECK(p->variables()[blob].initializer.size() == 3);
  int k = p->find_variable("k");
  REQUIRE(k >= 0);
  CHECK(p->variables()[k].space == VariableSpace::kConst);
  REQUIRE(p->variables()[k].initializer.size() == 8);
  float f[2];
  std::memcpy(f, p->variables()[k].initializer.data(), 8);
  CHECK(f[0] == 1.0f);
  CHECK(f[1] == 2.5f);
  CHECK(p->variables()[p->find_variable("ext")].is_extern);
}

TEST_CASE("parser errors carry line numbers", "[ptx][parser]") {
  SECTION("unknown instruction") {
    std::string e = error_of(std::string(kHeader) + ".entry k()\n{\n  frobnicate.u32 %r1;\n}\n");
    CHECK(e.rfind("line 6:", 0) == 0);
    CHECK(e.find("frobnicate") != std::string::npos);
  }
  SECTION("undeclared register") {
    std::string e = error_of(std::string(kHeader) +
                             ".entry k()\n{\n.reg .b32 %r<2>;\n  add.s32 %r1, %r7, 1;\n}\n");
    CHECK(e.rfind("line 7:", 0) == 0);
  }
  SECTION("unknown label") {
    std::string e = error_of(std::string(kHeader) + ".entry k()\n{\n\n  bra $L_nowhere;\n}\n");
    CHECK(e.rfind("line 7:", 0) == 0);
    CHECK(e.find("$L_nowhere") != std::string::npos);
  }
  SECTION("missing semicolon") {
    std::string e = error_of(std::string(kHeader) +
                             ".entry k()\n{\n.reg .b32 %r<2>;\n  mov.u32 %r1, 1\n  ret;\n}\n");
    CHECK(e.rfind("line 8:", 0) == 0);
  }
  SECTION("unterminated body") {
    std::string e = error_of(std::string(kHeader) + ".entry k()\n{\n  ret;\n");
    CHECK(e.find("unexpected end of input") != std::string::npos);
  }
  SECTION("missing .version") {
    std::string e = error_of(".target sm_75\n");
    CHECK(e.rfind("line 1:", 0) == 0);
  }
  SECTION("bad character") {
    std::string e = error_of(std::string(kHeader) + "\n\n  ` \n");
    CHECK(e.rfind("line 6:", 0) == 0);
  }
  SECTION("wrong operand count") {
    std::string e = error_of(std::string(kHeader) +
                             ".entry k()\n{\n.reg .b32 %r<2>;\n  add.s32 %r1, %r1;\n}\n");
    CHECK(e.rfind("line 7:", 0) == 0);
    CHECK(e.find("operands") != std::string::npos);
  }
}

TEST_CASE("nvcc PTX with comments and a trailing NUL (as inside fatbins) compiles",
          "[ptx][parser]") {
  std::string text = read_ptx("basic.sm75.ptx");
  text.push_back('\0');
  text += "garbage after NUL";
  auto p = compile_or_fail(text);
  CHECK(p->find_kernel("vector_add") >= 0);
  CHECK(p->find_kernel("saxpy") >= 0);
  CHECK(p->find_kernel("nope") == -1);
}

namespace {

// Inputs of the mutation tests: nvcc output compiled from a relative path (CMakeLists.txt: the
// assert strings hold no checkout path) and checked-in LLVM output, so what gets mutated, and
// therefore what the test covers, is the same wherever the tree lives.
std::vector<std::pair<std::string, std::string>> mutation_inputs() {
  std::vector<std::pair<std::string, std::string>> inputs;
  inputs.emplace_back("misc.sm75.ptx", read_ptx("misc.sm75.ptx"));
  for (const char* name : {"shared_call.ptx", "initializers_local.ptx", "struct_i128_half.ptx"}) {
    std::ifstream f(std::string(CUSNAP_TEST_LLVM_PTX_DIR) + "/" + name, std::ios::binary);
    REQUIRE(f.good());
    std::stringstream ss;
    ss << f.rdbuf();
    inputs.emplace_back(name, ss.str());
  }
  return inputs;
}

struct NumberToken {
  size_t at, size;
  int line;
};

// Every numeric literal outside comments and strings: a digit that does not continue an
// identifier (`%r12`, `sm_75`), through the alphanumerics and dots that follow it.
std::vector<NumberToken> number_tokens(const std::string& s) {
  std::vector<NumberToken> out;
  int line = 1;
  auto ident = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i + 1 < s.size() && s[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"') {
      while (i + 1 < s.size() && s[i + 1] != '"') ++i;
      ++i;
      continue;
    }
    if (ident(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      while (i + 1 < s.size() && ident(s[i + 1])) ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = i;
      while (end < s.size() && (ident(s[end]) || s[end] == '.')) ++end;
      out.push_back({i, end - i, line});
      i = end - 1;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every number replaced by a malformed one is refused naming its line", "[ptx][parser]") {
  // The literal forms the parser once let through to std::stoul (an exception, reported as an
  // internal error) or converted wrongly (out of range, locale, overflow).
  const char* const kBad[] = {"0x",  "0xZZ", "99999999999999999999999", "0f123", "1e999", "08",
                              "0b2", "1.5.5"};
  constexpr size_t kCount = sizeof kBad / sizeof kBad[0];
  for (const auto& [name, original] : mutation_inputs()) {
    const std::vector<NumberToken> numbers = number_tokens(original);
    REQUIRE(numbers.size() > 20);
    // The .version number is the first one: it is always among those replaced.
    REQUIRE(original.compare(numbers[0].at - 9, 9, ".version ") == 0);
    for (size_t k = 0; k < numbers.size(); ++k) {
      const NumberToken& n = numbers[k];
      for (size_t j = 0; j < 2; ++j) {  // two forms per number, cycling through the list
        const std::string bad = kBad[(k + j) % kCount];
        std::string text = original;
        text.replace(n.at, n.size, bad);
        CompileResult r = compile(text);
        INFO(name << ": '" << original.substr(n.at, n.size) << "' on line " << n.line << " -> '"
                  << bad << "': " << r.error);
        REQUIRE(r.program == nullptr);
        REQUIRE(r.status == CompileStatus::kInvalidPtx);
        REQUIRE(r.error.rfind("line " + std::to_string(n.line) + ":", 0) == 0);
      }
    }
  }
}

TEST_CASE("mutated PTX is rejected with a line number or compiles, never crashes",
          "[ptx][parser]") {
  for (const auto& [name, original] : mutation_inputs()) {
    Rng rng(1234);  // deterministic, and the inputs do not depend on the checkout path
    int rejected = 0;
    for (int iter = 0; iter < 400; ++iter) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(rng.next() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t pos = rng.next() % text.size();
        switch (rng.next() % 5) {
          case 0:
            text.resize(pos);
            break;  // truncate
          case 1:
            text.erase(pos, 1 + rng.next() % 12);
            break;  // delete a run
          case 2:
            text[pos] = "{}[];,.%@!<>|+-0x9fz\""[rng.next() % 21];
            break;   // replace a char
          case 3: {  // duplicate a piece elsewhere
            std::string piece = text.substr(rng.next() % text.size(), 1 + rng.next() % 30);
            text = text.substr(0, pos) + piece + text.substr(pos);
            break;
          }
          case 4:
            text = text.substr(0, pos) + "\n.reg .b32 %zz<99999999>;\n" + text.substr(pos);
            break;
        }
        if (text.empty()) text.push_back(' ');
      }
      CompileResult r = compile(text);
      if (!r.program) {
        ++rejected;
        INFO(name << " iteration " << iter << ": " << r.error);
        REQUIRE(r.error.rfind("line ", 0) == 0);
      }
    }
    INFO(name);
    CHECK(rejected > 100);
  }
}
