// Device memory of a replay: the captured ranges, placed at their captured addresses if possible.
//
// Same addresses (the default): each captured range, widened to the driver's VMM granularity
// and merged with its neighbours, is reserved with cuMemAddressReserve using the captured
// address as the hint; the replayer checks that the hint was honoured, then maps physical memory
// (cuMemCreate + cuMemMap + cuMemSetAccess) there. Pointers inside kernel parameters and inside
// device memory then stay valid without any rewriting. NVIDIA's driver 580 did not honour such a
// hint on an H200 but reserved at the hint rounded up to 32 MiB, so when the hint is refused the
// reservation is asked for from the 32 MiB boundary below the range (reserve_at), and only the
// range itself is mapped inside it.
//
// Relocation (fallback, or forced with AddressMode::kRelocate): a range whose address cannot be
// had lives elsewhere (the driver's choice; cuMemAlloc when the driver has no VMM). Addresses the
// replayer passes itself (copies, memsets) are translated exactly; pointer-sized kernel
// parameters whose value falls inside a relocated range are rewritten; pointers stored *inside*
// device memory cannot be found and stay wrong, which relocation_summary() says loudly.
//
// Module globals are placed by the driver: add_global() maps a captured global to its live
// address so that copies to it and pointer parameters naming it are translated the same way.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replayer/driver.h"
#include "replayer/plan.h"

namespace cusnap::replayer {

enum class AddressMode : uint8_t {
  kSame,      // captured addresses, relocation only where they cannot be had
  kRelocate,  // never ask for the captured addresses (tests, or a driver that misbehaves)
};

struct PlacedRange {
  uint64_t captured_base = 0;
  uint64_t size = 0;
  uint64_t live_base = 0;
  bool relocated() const { return captured_base != live_base; }
  // How the memory was obtained, for cleanup and reports.
  enum class Backing : uint8_t { kVmm, kAlloc, kGlobal, kHost } backing = Backing::kVmm;
  bool in_region = false;  // kVmm mapped inside one of DeviceMemory's wider reservations
  uint64_t physical = 0;   // CUmemGenericAllocationHandle (kVmm); the module handle (kGlobal)
};

class DeviceMemory {
 public:
  // Reserves and maps every range of `ranges` (sorted, disjoint) on the current context.
  static Expected<std::unique_ptr<DeviceMemory>> create(const Driver& driver, int device,
                                                        const std::vector<MemoryRange>& ranges,
                                                        AddressMode mode);
  ~DeviceMemory();  // unmaps and frees everything it created
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Live address of the captured bytes [address, address + size), which must lie inside one
  // placed range or global; std::nullopt otherwise (size 0 is treated as 1).
  std::optional<uint64_t> translate(uint64_t address, uint64_t size) const;
  // A module global the driver placed at `live` (replaces an earlier one at the same address).
  // `module` is the captured module handle, so that unloading it forgets its globals.
  void add_global(uint64_t module, uint64_t captured, uint64_t size, uint64_t live);
  // The captured bytes that the live bytes [live, live + size) are, one (captured address,
  // size) piece per placed range or global they overlap, ascending by captured address; parts in
  // none are left out.
  std::vector<std::pair<uint64_t, uint64_t>> captured_pieces(uint64_t live, uint64_t size) const;
  void forget_globals_of(uint64_t module);
  // Host memory kernels reach, recreated by the replay with device address `live`: translated
  // and rewritten like a global.
  void add_host(uint64_t captured, uint64_t size, uint64_t live);
  void forget_host(uint64_t captured);

  // Rewrites pointer-sized slots (8 bytes) whose value lies in a moved range or global. Without
  // a layout (an opaque `extra` buffer) every aligned 8-byte word is considered. Returns how many
  // values were rewritten.
  unsigned rewrite_pointers(std::vector<uint8_t>& params,
                            const std::vector<ParamSlot>& layout) const;

  bool any_relocated() const { return relocated_count_ > 0; }
  bool any_global_moved() const { return globals_moved_; }
  size_t relocated_count() const { return relocated_count_; }
  const std::vector<PlacedRange>& ranges() const { return placed_; }
  uint64_t mapped_bytes() const;
  // Empty when every range sits at its captured address; else a loud explanation.
  std::string relocation_summary() const;
  // The granularity-widened ranges that create() would map (for the memory check).
  static uint64_t bytes_needed(const std::vector<MemoryRange>& ranges, uint64_t granularity);
  static std::vector<MemoryRange> widen(const std::vector<MemoryRange>& ranges,
                                        uint64_t granularity);

 private:
  explicit DeviceMemory(const Driver& driver) : driver_(driver) {}
  MaybeError place(const MemoryRange& range, int device, AddressMode mode, uint64_t granularity);
  // Reserves `size` bytes at exactly `address`, else reserves nowhere (returns 0): the captured
  // address as the hint, then - NVIDIA's driver 580 rounds hints up to 32 MiB - a reservation
  // from `address` rounded down to 32 MiB (kept in regions_, shared by later ranges inside it).
  // *in_region: the range lies in one of regions_ (freed with it, not on its own).
  uint64_t reserve_at(uint64_t address, uint64_t size, uint64_t granularity, bool* in_region);
  const PlacedRange* find(uint64_t address) const;

  const Driver& driver_;
  std::vector<PlacedRange> placed_;  // device ranges, sorted by captured_base
  // Reservations wider than their ranges (reserve_at), freed last: [start, start + size).
  std::vector<std::pair<uint64_t, uint64_t>> regions_;
  std::map<uint64_t, PlacedRange> globals_;  // globals and host memory, by captured address
  size_t relocated_count_ = 0;
  bool globals_moved_ = false;
};

}  // namespace cusnap::replayer
