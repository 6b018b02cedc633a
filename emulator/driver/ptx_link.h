// The driver linker's core (cuLinkComplete): several PTX modules made into one PTX module the
// engine compiles like any other, with the link semantics of nvlink for what PTX declares:
//
// * `.extern` functions and variables resolve to the `.visible` (or `.weak` / `.common`)
//   definition of the same name in any module; a referenced `.extern` with no definition is an
//   error naming the symbol and the input ("undefined reference"), except the functions the
//   engine itself provides (vprintf, __assertfail, malloc, free). `.extern .shared` arrays are
//   the dynamic shared memory of each module's kernels, never resolved across modules.
// * Two strong (`.visible`) definitions of one name are an error ("multiple definitions"); a
//   strong definition overrides weak ones, and of weak ones only the first counts. A symbol
//   declared as a function in one module and a variable (or in another state space) in another
//   is an error. Kernels (`.entry`) keep their names; the same kernel in two modules is an error.
// * Names with internal linkage (no linkage directive) are private to their module: when one is
//   also declared at module scope in another module, it is renamed in its own module (every
//   occurrence, so the module's code keeps meaning what it meant) to `<name>$cusnap<input>`.
//   nvcc gives every module that prints a `$str`, so this is the common case.
// * The result has one `.version` (the highest of the inputs) and one `.target` (the highest
//   sm_NN, with the union of the other target options); every input must be `.address_size 64`.
//
// It works on the text: comments and string literals are skipped, module-scope statements are
// found by their terminating `;` or function body, and the output keeps each input's text in
// input order with only declarations dropped or replaced and identifiers renamed. A definition
// always precedes the declarations that remain after it, since the engine binds an `.extern`
// that follows a definition of the same name to nothing.
#pragma once

#include <string>
#include <vector>

namespace cusnap::emu::driver {

struct LinkInput {
  std::string name;  // what error messages call it (the cuLinkAddData name, a file, a member)
  std::string ptx;
};

struct LinkOutput {
  bool ok = false;
  std::string ptx;    // the linked module (when ok)
  std::string error;  // one line per problem, e.g. "undefined reference to 'f' in 'b.ptx'"
};

LinkOutput link_ptx(const std::vector<LinkInput>& inputs);

}  // namespace cusnap::emu::driver
