// CUDA arrays (cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate) and the texture and
// surface objects made from them or from device memory (texture.cpp).
//
// An array is a packed, row-major texel grid in host memory (rows of width * texel bytes, then
// height rows per slice or layer): the layout is the emulator's own, which the API never exposes
// (applications reach array memory only through copies, textures and surfaces). Arrays are not
// entries of the allocation table: device code cannot address them with ld/st, as on a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "generated_driver_api.h"
#include "ptx/engine.h"

namespace cusnap::emu::driver {

struct CudaArray {
  CUDA_ARRAY3D_DESCRIPTOR desc{};  // as created (Height/Depth 0 for 1D / 2D)
  CUcontext context = nullptr;
  uint32_t texel_bytes = 0;
  uint64_t row_pitch = 0;            // width * texel_bytes
  uint64_t slice_pitch = 0;          // row_pitch * max(height, 1)
  uint64_t bytes = 0;                // slice_pitch * max(depth, 1)
  uint8_t* data = nullptr;           // zero-filled at creation
  CUmipmappedArray owner = nullptr;  // a mipmap level: destroyed with its mipmapped array
  ~CudaArray();
};

struct MipmappedArray {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  CUcontext context = nullptr;
  std::vector<std::unique_ptr<CudaArray>> levels;
};

// The live array a handle names (and not a destroyed one), or null.
CudaArray* find_array(CUarray handle);
MipmappedArray* find_mipmapped_array(CUmipmappedArray handle);
// Bytes per element of a CUarray_format (0: not a format the emulator knows).
uint32_t format_bytes(CUarray_format format);
// The engine's texel format of a CUarray_format; false for formats the engine does not decode
// (block-compressed, packed YUV, the 10/11-bit packed formats), which the caller refuses.
bool texel_format(CUarray_format format, ptx::TexelFormat* out);
// The engine's view of an array.
ptx::ImageView image_of(const CudaArray& a);

// Texture and surface objects (texture.cpp), looked up by the engine through the allocation
// table (the MemoryHost of every launch).
bool lookup_texture(uint64_t handle, ptx::TextureView* out);
bool lookup_surface(uint64_t handle, ptx::SurfaceView* out);

// The texel grid a resource descriptor names (every level of a mipmapped array), or the error.
CUresult resolve_resource(const CUDA_RESOURCE_DESC& r, ptx::TextureView* out);
// The sampling state of a texture descriptor into `v` (whose levels are resolved already);
// refuses (NOT_SUPPORTED) what the engine does not filter exactly, logged naming `caller` unless
// it is null.
CUresult sampling_state(const CUDA_TEXTURE_DESC& t, ptx::TextureView* v, const char* caller);

// Legacy texture and surface references (CUtexref, CUsurfref: texref.cpp). Each has a handle in
// the object registry above, the value its module's `.texref`/`.surfref` variable holds, so the
// engine looks it up like an object; the lookup reads the reference's state at that moment.
uint64_t register_reference(const void* reference, bool surface);
void unregister_reference(uint64_t handle);
bool reference_texture_view(const void* reference, ptx::TextureView* out);
bool reference_surface_view(const void* reference, ptx::SurfaceView* out);
struct Module;
// The references of a module's `.texref`/`.surfref` variables, made at load (the handle written
// into each variable) and destroyed at unload.
CUresult create_module_references(Module* module);
void destroy_module_references(Module* module);

}  // namespace cusnap::emu::driver
