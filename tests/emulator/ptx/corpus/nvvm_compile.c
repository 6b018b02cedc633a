/* Compiles one NVVM IR file with the toolkit's libNVVM and prints the PTX (regenerate.sh):
 *   nvvm_compile <file.ll> <option>...   e.g. -arch=compute_75 */
#include <nvvm.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(nvvmProgram prog, const char* what, nvvmResult r) {
  fprintf(stderr, "%s: %s\n", what, nvvmGetErrorString(r));
  size_t size = 0;
  if (prog != NULL && nvvmGetProgramLogSize(prog, &size) == NVVM_SUCCESS && size > 1) {
    char* log = malloc(size);
    if (log != NULL && nvvmGetProgramLog(prog, log) == NVVM_SUCCESS) fprintf(stderr, "%s\n", log);
    free(log);
  }
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <file.ll> [options]\n", argv[0]);
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* ir = malloc((size_t)n + 1);
  if (ir == NULL || fread(ir, 1, (size_t)n, f) != (size_t)n) return 1;
  ir[n] = '\0';
  fclose(f);
  nvvmProgram prog = NULL;
  nvvmResult r = nvvmCreateProgram(&prog);
  if (r != NVVM_SUCCESS) return fail(NULL, "nvvmCreateProgram", r);
  r = nvvmAddModuleToProgram(prog, ir, (size_t)n, argv[1]);
  if (r != NVVM_SUCCESS) return fail(prog, "nvvmAddModuleToProgram", r);
  r = nvvmCompileProgram(prog, argc - 2, (const char**)(argv + 2));
  if (r != NVVM_SUCCESS) return fail(prog, "nvvmCompileProgram", r);
  size_t size = 0;
  r = nvvmGetCompiledResultSize(prog, &size);
  if (r != NVVM_SUCCESS) return fail(prog, "nvvmGetCompiledResultSize", r);
  char* ptx = malloc(size);
  if (ptx == NULL) return 1;
  r = nvvmGetCompiledResult(prog, ptx);
  if (r != NVVM_SUCCESS) return fail(prog, "nvvmGetCompiledResult", r);
  fputs(ptx, stdout);
  nvvmDestroyProgram(&prog);
  free(ptx);
  free(ir);
  return 0;
}
