#include "kernels/cpu/dnnl_value.h"

#include <atomic>
#include <unordered_map>

#include "kernels/cpu/dnnl_context.h"

namespace cntk::kernels {

namespace {
std::atomic<size_t> g_reorders{0}, g_weight_reorders{0};
}  // namespace

size_t dnnl_reorders() { return g_reorders; }
size_t dnnl_weight_reorders() { return g_weight_reorders; }
void count_dnnl_reorder(bool weights) { ++(weights ? g_weight_reorders : g_reorders); }

dnnl::memory::desc dnnl_plain_desc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory dnnl_in_layout(const dnnl::memory& m, const dnnl::memory::desc& want, bool weights) {
  if (m.get_desc() == want) return m;
  dnnl::memory r(want, dnnl_engine());
  count_dnnl_reorder(weights);
  dnnl::reorder(m, r).execute(dnnl_stream(), const_cast<dnnl::memory&>(m), r);
  return r;
}

dnnl::memory dnnl_plain_in_layout(const NDArrayView& plain, const dnnl::memory::desc& want) {
  dnnl::memory m(dnnl_plain_desc(want.dims()), dnnl_engine(), const_cast<void*>(plain.raw_data()));
  return dnnl_in_layout(m, want);
}

std::shared_ptr<LayoutValue> dnnl_add(const LayoutValue& a, const LayoutValue& b) {
  const dnnl::memory::desc md = mem_of(a).get_desc();
  dnnl::memory bm = dnnl_in_layout(mem_of(b), md);
  auto r = std::make_shared<DnnlValue>();
  r->mem = dnnl::memory(md, dnnl_engine());
  r->dtype = a.dtype;
  r->shape = a.shape;
  dnnl::sum::primitive_desc pd({1.f, 1.f}, {md, md}, dnnl_engine());
  dnnl::sum(pd).execute(dnnl_stream(), {{DNNL_ARG_MULTIPLE_SRC, const_cast<dnnl::memory&>(mem_of(a))},
                                        {DNNL_ARG_MULTIPLE_SRC + 1, bm},
                                        {DNNL_ARG_DST, r->mem}});
  dnnl_stream().wait();
  return r;
}

static std::shared_ptr<LayoutValue> run_concat(const dnnl::concat::primitive_desc& pd,
                                               const std::vector<dnnl::memory>& srcs);

std::shared_ptr<LayoutValue> dnnl_concat(const std::vector<dnnl::memory>& srcs) {
  std::vector<dnnl::memory::desc> mds;
  for (auto& m : srcs) mds.push_back(m.get_desc());
  // Left to itself, concat picks a layout with the channel blocks outermost (a plain copy
  // per input), which the next convolution would reorder: where the inputs come in the
  // convolutions' channel-blocked layout, the output takes it too.
  using tag = dnnl::memory::format_tag;
  dnnl::memory::dims out = mds[0].dims();
  out[1] = 0;
  for (auto& md : mds) out[1] += md.dims()[1];
  for (tag t : {tag::aBc16b, tag::aBcd16b, tag::aBcde16b, tag::aBc8b, tag::aBcd8b, tag::aBcde8b}) {
    for (auto& md : mds) {
      if (md.dims().size() < 3 || md.dims().size() > 5) break;
      dnnl::memory::desc like;
      try {
        like = dnnl::memory::desc(md.dims(), dnnl::memory::data_type::f32, t);
      } catch (const dnnl::error&) {
        break;  // a tag of another rank
      }
      if (like != md) continue;
      dnnl::concat::primitive_desc pd(dnnl::memory::desc(out, dnnl::memory::data_type::f32, t), 1, mds, dnnl_engine());
      return run_concat(pd, srcs);
    }
  }
  dnnl::concat::primitive_desc pd(1, mds, dnnl_engine());
  return run_concat(pd, srcs);
}

static std::shared_ptr<LayoutValue> run_concat(const dnnl::concat::primitive_desc& pd,
                                               const std::vector<dnnl::memory>& srcs) {
  auto r = std::make_shared<DnnlValue>();
  r->mem = dnnl::memory(pd.dst_desc(), dnnl_engine());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, r->mem}};
  for (size_t i = 0; i < srcs.size(); ++i) args.emplace(DNNL_ARG_MULTIPLE_SRC + int(i), srcs[i]);
  dnnl::concat(pd).execute(dnnl_stream(), args);
  dnnl_stream().wait();
  return r;
}

bool dnnl_channel_slice(const LayoutValue& v, int64_t offset, int64_t count, const dnnl::memory::desc& want,
                        void* buffer, dnnl::memory& out) {
  const dnnl::memory::desc md = mem_of(v).get_desc();
  dnnl::memory::dims dims = md.dims(), offsets(dims.size(), 0);
  if (dims.size() < 2) return false;
  dims[1] = count;
  offsets[1] = offset;
  dnnl::memory::desc sub;
  try {
    sub = md.submemory_desc(dims, offsets);
  } catch (const dnnl::error&) {
    return false;
  }
  dnnl::memory part(sub, dnnl_engine(), mem_of(v).get_data_handle());
  out = buffer ? dnnl::memory(want, dnnl_engine(), buffer) : dnnl::memory(want, dnnl_engine());
  // A part copied between two oneDNN layouts is a copy the plain path makes too; between
  // a oneDNN layout and the plain one it is a reorder.
  if ((md == dnnl_plain_desc(md.dims())) != (want == dnnl_plain_desc(want.dims()))) count_dnnl_reorder(false);
  dnnl::reorder(part, out).execute(dnnl_stream(), part, out);
  dnnl_stream().wait();
  return true;
}

std::string dnnl_desc_key(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  std::string k = std::to_string(int(d.data_type)) + ":";
  for (int i = 0; i < d.ndims; ++i) k += std::to_string(d.dims[i]) + ",";
  k += "f" + std::to_string(int(d.format_kind));
  if (d.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& b = d.format_desc.blocking;
    k += "s";
    for (int i = 0; i < d.ndims; ++i) k += std::to_string(b.strides[i]) + ",";
    k += "b";
    for (int i = 0; i < b.inner_nblks; ++i)
      k += std::to_string(b.inner_blks[i]) + "/" + std::to_string(b.inner_idxs[i]) + ",";
  }
  return k;
}

NDArrayView dnnl_to_plain(const LayoutValue& v) {
  if (v.dtype != DataType::Float) throw Error("a value in a oneDNN layout must be float32");
  NDArrayView y(DataType::Float, v.shape);
  dnnl::memory::desc md = mem_of(v).get_desc();
  if (y.numel() == 0) return y;
  dnnl::memory dst(dnnl_plain_desc(md.dims()), dnnl_engine(), y.raw_data());
  count_dnnl_reorder(false);
  dnnl::reorder(mem_of(v), dst).execute(dnnl_stream(), const_cast<dnnl::memory&>(mem_of(v)), dst);
  dnnl_stream().wait();
  return y;
}

dnnl::memory dnnl_grad_in_layout(const LayoutValue* kept, const NDArrayView& plain, const dnnl::memory::desc& want,
                                 NDArrayView& keep) {
  if (kept) return dnnl_in_layout(mem_of(*kept), want);
  keep = plain.to_dense().contiguous();
  if (keep.dtype() != DataType::Float) keep = keep.cast(DataType::Float);
  return dnnl_plain_in_layout(keep, want);
}

}  // namespace cntk::kernels

namespace cntk {

// The public counters (cntk/evaluation.h).
size_t dnnl_reorders() { return kernels::dnnl_reorders(); }
size_t dnnl_weight_reorders() { return kernels::dnnl_weight_reorders(); }

}  // namespace cntk
