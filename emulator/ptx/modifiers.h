// The closed world of PTX instruction modifiers. For every opcode the lowering decodes, a table
// (modifiers.cpp) lists the forms the emulator executes, written like the syntax lines of the PTX
// ISA: which modifiers may appear, which are required, which are mutually exclusive, and with
// which types. An instruction is lowered only when one form accepts all of its modifiers and
// types; anything else (an unknown or misspelled modifier, a modifier the emulator does not
// implement, a combination the ISA forbids, a missing required modifier) fails the module load
// naming the instruction, instead of running as if the modifier were absent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cusnap::emu::ptx {

struct ModifierVerdict {
  enum Kind : uint8_t {
    kAccepted,
    kUnknownOpcode,  // no forms: not an instruction the lowering decodes
    kNotSupported,   // known modifiers in a form the emulator does not execute
    kInvalid,        // a modifier no PTX instruction has (misspelled, made up)
  };
  Kind kind = kAccepted;
  std::string why;  // kNotSupported / kInvalid: what is wrong, naming the modifier or type
};

// `mods` are the dotted words after the opcode, types included, in source order.
ModifierVerdict check_modifiers(std::string_view opcode, const std::vector<std::string_view>& mods);

// A modifier the emulator accepts although it has no effect on results in its execution model
// (cache operators, eviction priorities, `.uni`, `.aligned`, ...).
struct NoEffectModifier {
  std::string opcode;
  std::string modifier;
  const char* reason;  // null when the table lacks one (a test checks there is none)
};
std::vector<NoEffectModifier> no_effect_modifiers();

}  // namespace cusnap::emu::ptx
