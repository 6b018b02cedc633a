// Graph memory: the allocations of memory allocation and free nodes (graph.h, "graph memory"),
// cuGraphMem*NodeGetParams, and the graph memory attributes of the device.
//
// Accounting follows the documented attributes: "used" is the memory of live graph allocations
// (allocated by a launch and not freed yet); "reserved" is what the graph allocator holds for
// them, charged against the device total: an allocation's pages are charged when a launch first
// allocates it and stay reserved after its free, for the next launch, until cuDeviceGraphMemTrim
// gives them back (or the allocation's last node goes).
#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/memory.h"
#include "driver/state.h"
#include "driver/stats.h"

namespace cusnap::emu::driver {

struct GraphAllocation {
  uint64_t base = 0;
  uint64_t size = 0;     // the node's bytesize
  uint64_t mapped = 0;   // mapped with the redzone, page rounded
  uint64_t charged = 0;  // page rounded size: what a live allocation counts against the device
  CUcontext context = nullptr;
  // Guarded by g_mutex:
  const Graph* owner = nullptr;    // the graph whose alloc node made it
  const Graph* freeing = nullptr;  // the graph with a free node for it, if any
  bool live = false;               // allocated by a launch and not freed
  bool backed = false;             // `charged` is reserved against the device total
  ~GraphAllocation();
};

namespace {

std::mutex g_mutex;  // after graph_mutex() when both are held
// Every graph allocation by address (weak: the nodes and queued launches own them), and the
// live ones (owned: an allocation freed by nothing stays allocated, as on the driver).
std::map<uint64_t, std::weak_ptr<GraphAllocation>> g_index;
std::unordered_map<uint64_t, std::shared_ptr<GraphAllocation>> g_live;
uint64_t g_used = 0, g_used_high = 0, g_reserved = 0, g_reserved_high = 0;

uint64_t page_round(uint64_t size) {
  const uint64_t page = host_page_size();
  return (size + page - 1) / page * page;
}

std::shared_ptr<GraphAllocation> find_locked(uint64_t base) {
  auto it = g_index.find(base);
  return it == g_index.end() ? nullptr : it->second.lock();
}

// The host-side state changes (g_mutex held).
void mark_live(GraphAllocation& a, const std::shared_ptr<GraphAllocation>& owner) {
  a.live = true;
  g_live[a.base] = owner;
  g_used += a.charged;
  g_used_high = std::max(g_used_high, g_used);
}
std::shared_ptr<GraphAllocation> mark_freed(GraphAllocation& a) {
  a.live = false;
  g_used -= a.charged;
  auto it = g_live.find(a.base);
  std::shared_ptr<GraphAllocation> keep = std::move(it->second);
  g_live.erase(it);
  return keep;  // dropped by the caller once g_mutex is released (its destructor takes it)
}

Allocation table_entry(const GraphAllocation& a) {
  Allocation t;
  t.base = a.base;
  t.size = a.size;
  t.mapped_size = 0;  // the mapping is the GraphAllocation's, not the table's
  t.kind = AllocationKind::kDevice;
  t.context = a.context;
  t.buffer_id = next_buffer_id();
  t.counts_as_device_memory = false;  // charged here (`backed`), not by the table's owner
  return t;
}

CUresult refuse(const char* what) {
  log(LogLevel::kError, "%s", what);
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

GraphAllocation::~GraphAllocation() {
  std::lock_guard lock(g_mutex);
  if (auto it = g_index.find(base); it != g_index.end() && it->second.expired()) g_index.erase(it);
  if (backed) {
    allocations().refund(charged);
    g_reserved -= charged;
  }
  unmap_anonymous(reinterpret_cast<void*>(base), mapped);
}

CUresult graph_alloc_spec(const CUmemPoolProps& props, const CUmemAccessDesc* access,
                          size_t access_count, size_t bytesize, CUdeviceptr* dptr,
                          std::unique_ptr<GraphNode>* out) {
  Context* ctx = current_context();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // "handleTypes must be CU_MEM_HANDLE_TYPE_NONE. IPC is not supported"; pinned device memory
  // of the one device; "accessDescCount must not exceed the number of GPUs".
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props.handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
      props.location.type != CU_MEM_LOCATION_TYPE_DEVICE || props.location.id != 0 ||
      bytesize == 0 || access_count > 1 || (access_count > 0 && access == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < access_count; ++i) {
    if (access[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || access[i].location.id != 0 ||
        access[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (bytesize > UINT64_MAX - redzone_bytes() - 2 * host_page_size())
    return CUDA_ERROR_OUT_OF_MEMORY;
  auto a = std::make_shared<GraphAllocation>();
  a->size = bytesize;
  a->charged = page_round(bytesize);
  a->mapped = page_round(bytesize + redzone_bytes());
  a->context = ctx->handle();
  void* p = map_anonymous(a->mapped);
  if (p == nullptr) {
    a->mapped = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->base = reinterpret_cast<uint64_t>(p);
  {
    std::lock_guard lock(g_mutex);
    g_index[a->base] = a;
  }
  auto node = std::make_unique<GraphNode>();
  node->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  node->alloc_props = props;
  node->alloc_access.assign(access, access + access_count);
  node->allocation = std::move(a);
  *dptr = node->allocation->base;
  *out = std::move(node);
  return CUDA_SUCCESS;
}

CUresult graph_free_spec(CUdeviceptr dptr, std::unique_ptr<GraphNode>* out) {
  std::shared_ptr<GraphAllocation> a;
  {
    std::lock_guard lock(g_mutex);
    a = find_locked(dptr);
  }
  if (a == nullptr)
    return refuse(
        "cuGraphAddMemFreeNode: the address was not returned by an "
        "allocation node");
  auto node = std::make_unique<GraphNode>();
  node->type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  node->allocation = std::move(a);
  *out = std::move(node);
  return CUDA_SUCCESS;
}

namespace {
// Whether `target` is among the nodes `from` reaches backwards (`from` included).
bool reaches(const GraphNode* from, const GraphNode* target,
             std::unordered_set<const GraphNode*>* seen) {
  if (from == target) return true;
  if (!seen->insert(from).second) return false;
  return std::any_of(from->deps.begin(), from->deps.end(),
                     [&](const GraphNode* d) { return reaches(d, target, seen); });
}
}  // namespace

CUresult attach_memory_node(Graph* graph, GraphNode* node, const std::vector<GraphNode*>& deps) {
  if (node->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC && node->type != CU_GRAPH_NODE_TYPE_MEM_FREE)
    return CUDA_SUCCESS;
  if (node->allocation == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(g_mutex);
  GraphAllocation& a = *node->allocation;
  if (node->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    a.owner = graph;
    return CUDA_SUCCESS;
  }
  // "It is not possible to free an allocation in both the owning graph and another graph", nor
  // twice in the same graph.
  if (a.freeing != nullptr)
    return refuse("cuGraphAddMemFreeNode: the allocation already has a free node");
  if (a.owner == graph) {
    // The emulator runs a graph's nodes in one order; a free the allocation does not precede
    // could run first. Nodes "ordered after the allocation node but before the free node" may
    // use the memory, so the free node must be ordered after the allocation node.
    const GraphNode* alloc_node = nullptr;
    for (const GraphNode* n : graph->nodes) {
      if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && n->allocation.get() == &a) alloc_node = n;
    }
    std::unordered_set<const GraphNode*> seen;
    bool ordered = std::any_of(deps.begin(), deps.end(),
                               [&](const GraphNode* d) { return reaches(d, alloc_node, &seen); });
    if (!ordered)
      return refuse(
          "cuGraphAddMemFreeNode: a free node in the allocation's own graph must "
          "depend on its allocation node");
  }
  a.freeing = graph;
  return CUDA_SUCCESS;
}

void detach_memory_node(const GraphNode* node) {
  if (node->type != CU_GRAPH_NODE_TYPE_MEM_FREE || !node->registered || !node->allocation) return;
  std::lock_guard lock(g_mutex);
  if (node->allocation->freeing == node->graph) node->allocation->freeing = nullptr;
}

bool has_memory_nodes(const Graph& graph) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const GraphNode* n) {
    return n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE;
  });
}

bool is_graph_allocation(CUdeviceptr dptr) {
  std::shared_ptr<GraphAllocation> a;  // dropped after g_mutex (its destructor takes it)
  std::lock_guard lock(g_mutex);
  a = find_locked(dptr);
  return a != nullptr;
}

bool in_graph_allocation(uint64_t address, uint64_t size, bool live) {
  std::shared_ptr<GraphAllocation> a;  // dropped after g_mutex (its destructor takes it)
  std::lock_guard lock(g_mutex);
  auto it = g_index.upper_bound(address);
  if (it == g_index.begin()) return false;
  a = std::prev(it)->second.lock();
  return a != nullptr && (!live || a->live) && address - a->base <= a->size &&
         size <= a->size - (address - a->base);
}

CUresult graph_memory_launch(const std::vector<GraphNode*>& order, bool auto_free,
                             std::vector<Stream::Work>* before) {
  std::vector<std::shared_ptr<GraphAllocation>> dropped;  // released after g_mutex
  std::lock_guard lock(g_mutex);
  // First the checks, on a copy of the states, so that a refused launch changes nothing.
  std::unordered_map<const GraphAllocation*, bool> state;
  auto live = [&](const GraphAllocation* a) {
    auto it = state.find(a);
    return it != state.end() ? it->second : a->live;
  };
  uint64_t to_charge = 0;
  for (const GraphNode* n : order) {
    const GraphAllocation* a = n->allocation.get();
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      if (live(a) && !(auto_free && a->live && !state.count(a))) {
        return refuse(
            "cuGraphLaunch: an allocation of the graph's previous launch is not freed "
            "yet (free it, or instantiate with AUTO_FREE_ON_LAUNCH)");
      }
      if (!a->backed) to_charge += a->charged;
      state[a] = true;
    } else if (n->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
      if (!live(a)) return refuse("cuGraphLaunch: a free node frees an allocation not allocated");
      state[a] = false;
    }
  }
  if (to_charge > 0 && !allocations().charge(to_charge)) return CUDA_ERROR_OUT_OF_MEMORY;
  // Then the changes, in launch order.
  for (const GraphNode* n : order) {
    GraphAllocation& a = *n->allocation;
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      if (a.live) {  // AUTO_FREE_ON_LAUNCH: freed at the start of this launch
        dropped.push_back(mark_freed(a));
        before->push_back(graph_free_work(n->allocation));
      }
      if (!a.backed) {
        a.backed = true;
        g_reserved += a.charged;
        g_reserved_high = std::max(g_reserved_high, g_reserved);
      }
      mark_live(a, n->allocation);
    } else if (n->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
      dropped.push_back(mark_freed(a));
    }
  }
  return CUDA_SUCCESS;
}

Stream::Work graph_alloc_work(const std::shared_ptr<GraphAllocation>& allocation) {
  return [allocation] {
    allocations().erase(allocation->base);  // a stale entry of a free ordered wrongly
    allocations().insert(table_entry(*allocation));
    note_allocation(AllocationKind::kDevice, allocation->size);
    return uint64_t{0};
  };
}

Stream::Work graph_free_work(const std::shared_ptr<GraphAllocation>& allocation) {
  return [allocation] {
    if (allocations().erase(allocation->base)) note_free(AllocationKind::kDevice, allocation->size);
    return uint64_t{0};
  };
}

CUresult graph_memory_free(CUdeviceptr dptr, Context* ctx, Stream* stream, bool* handled) {
  std::shared_ptr<GraphAllocation> a, dropped;
  {
    std::lock_guard lock(g_mutex);
    a = find_locked(dptr);
    *handled = a != nullptr;
    if (a == nullptr) return CUDA_SUCCESS;
    // "These allocations cannot be freed outside the owning graph" when a free node of the
    // owning graph frees them; an allocation not allocated now cannot be freed.
    if (a->freeing != nullptr && a->freeing == a->owner)
      return refuse("the allocation is freed by a free node of its own graph");
    if (!a->live)
      return refuse(
          "the graph allocation is not allocated now (never launched, or "
          "freed already)");
    dropped = mark_freed(*a);
  }
  if (stream == nullptr) {
    graph_free_work(a)();
  } else {
    ctx->submit(stream, graph_free_work(a));
  }
  return CUDA_SUCCESS;
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

CUSNAP_EXPORT CUresult CUDAAPI
cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  return guarded("cuGraphMemAllocNodeGetParams", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    auto* n = handle_cast<GraphNode>(hNode, HandleKind::kGraphNode);
    if (n == nullptr || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || params_out == nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    params_out->poolProps = n->alloc_props;
    params_out->accessDescs = n->alloc_access.empty() ? nullptr : n->alloc_access.data();
    params_out->accessDescCount = n->alloc_access.size();
    params_out->bytesize = n->allocation->size;
    params_out->dptr = n->allocation->base;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode,
                                                           CUdeviceptr* dptr_out) {
  return guarded("cuGraphMemFreeNodeGetParams", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    auto* n = handle_cast<GraphNode>(hNode, HandleKind::kGraphNode);
    if (n == nullptr || n->type != CU_GRAPH_NODE_TYPE_MEM_FREE || dptr_out == nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    *dptr_out = n->allocation->base;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device) {
  return guarded("cuDeviceGraphMemTrim", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    // "Blocks which are not in use by a graph that is either currently executing or scheduled to
    // execute are freed back to the operating system": the reserved pages of every allocation
    // that is not allocated now. (Their contents are undefined once freed; the pages are
    // dropped, and read as zero if allocated again.)
    // Strong references taken here are dropped after g_mutex (a destructor takes it).
    std::vector<std::shared_ptr<GraphAllocation>> held;
    std::lock_guard lock(g_mutex);
    for (auto& [base, weak] : g_index) {
      std::shared_ptr<GraphAllocation> a = weak.lock();
      if (a == nullptr || a->live || !a->backed) continue;
      madvise(reinterpret_cast<void*>(a->base), a->charged, MADV_DONTNEED);
      allocations().refund(a->charged);
      g_reserved -= a->charged;
      a->backed = false;
      held.push_back(std::move(a));
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device,
                                                            CUgraphMem_attribute attr,
                                                            void* value) {
  return guarded("cuDeviceGetGraphMemAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(g_mutex);
    cuuint64_t v;
    switch (attr) {
      case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        v = g_used;
        break;
      case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        v = g_used_high;
        break;
      case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        v = g_reserved;
        break;
      case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        v = g_reserved_high;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    *static_cast<cuuint64_t*>(value) = v;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device,
                                                            CUgraphMem_attribute attr,
                                                            void* value) {
  return guarded("cuDeviceSetGraphMemAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // "High watermark can only be reset to zero"; the current values cannot be set.
    if (*static_cast<const cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(g_mutex);
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) {
      g_used_high = 0;
    } else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
      g_reserved_high = 0;
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}
