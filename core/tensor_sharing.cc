#include "core/tensor_sharing.h"

#include <algorithm>


namespace devplace {

bool SharesTensor(const Graph& graph, int32_t e) {
  const Edge& edge = graph.edge(e);
  return edge.bytes > 0 && graph.op(edge.src).role == OpRole::kForward &&
         graph.op(edge.dst).role != OpRole::kUpdate;
}

bool SameTensor(const Graph& graph, int32_t e, int32_t f) {
  const Edge& a = graph.edge(e);
  const Edge& b = graph.edge(f);
  return a.src == b.src && a.bytes == b.bytes && SharesTensor(graph, e) && SharesTensor(graph, f);
}

TensorCarriers::TensorCarriers(const Graph& graph) {
  carrier_.resize(static_cast<size_t>(graph.num_edges()));
  for (int32_t e = 0; e < graph.num_edges(); ++e) carrier_[e] = graph.edge(e).bytes == 0 ? -1 : e;
  class_off_.assign(1, 0);
  std::vector<std::pair<int64_t, int32_t>> taking;  // (bytes, edge) of one producer's edges taking part
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (graph.op(u).role != OpRole::kForward || graph.out_edges(u).size() < 2) continue;
    taking.clear();
    for (int32_t e : graph.out_edges(u))
      if (SharesTensor(graph, e)) taking.emplace_back(graph.edge(e).bytes, e);
    std::sort(taking.begin(), taking.end());
    for (size_t i = 0; i < taking.size();) {
      size_t j = i + 1;
      while (j < taking.size() && taking[j].first == taking[i].first) ++j;
      if (j - i >= 2) {
        for (size_t k = i; k < j; ++k) {
          class_edge_.push_back(taking[k].second);
          class_dst_.push_back(graph.edge(taking[k].second).dst);
        }
        class_src_.push_back(u);
        class_off_.push_back(static_cast<int32_t>(class_edge_.size()));
      }
      i = j;
    }
  }
}

void TensorCarriers::Assign(std::span<const int32_t> place, int32_t num_places) {
  if (first_.size() < static_cast<size_t>(num_places)) first_.assign(static_cast<size_t>(num_places), -1);
  const int32_t* at = place.data();
  const int32_t *edge = class_edge_.data(), *dst = class_dst_.data();
  int32_t* carrier = carrier_.data();
  for (size_t c = 0; c < class_src_.size(); ++c) {
    const int32_t begin = class_off_[c], end = class_off_[c + 1], from = at[class_src_[c]];
    for (int32_t k = begin; k < end; ++k) {  // ascending ids: the first edge to a place carries the tensor there
      const int32_t to = at[dst[k]];
      if (to == from) continue;  // carrier() is not asked for it
      int32_t& first = first_[to];
      if (first < 0) first = edge[k];
      carrier[edge[k]] = first;
    }
    for (int32_t k = begin; k < end; ++k) first_[at[dst[k]]] = -1;
  }
}

int64_t TensorCarriers::memory_bytes() const {
  return static_cast<int64_t>((class_off_.capacity() + class_src_.capacity() + class_edge_.capacity() +
                               class_dst_.capacity() + carrier_.capacity() + first_.capacity()) *
                              sizeof(int32_t));
}

std::vector<int32_t> CarrierEdges(const Graph& graph, std::span<const int32_t> place) {
  int32_t places = 0;
  for (int32_t p : place) places = std::max(places, p + 1);
  TensorCarriers carriers(graph);
  carriers.Assign(place, places);
  std::vector<int32_t> carrier(static_cast<size_t>(graph.num_edges()));
  for (int32_t e = 0; e < graph.num_edges(); ++e)
    carrier[e] = carriers.carrier(e, place[graph.edge(e).src] != place[graph.edge(e).dst]);
  return carrier;
}

}  // namespace devplace
