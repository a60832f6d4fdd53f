#include "store/object_cache.h"

#include <functional>

namespace gantry::store {

namespace {

// What an entry costs against the capacity: its text, its key twice (the entry and the
// index hold views of one string, but count the node overheads roughly as a second copy).
size_t CostOf(const std::string& key, const std::string& text) {
  return text.size() + 2 * key.size() + 64;
}

}  // namespace

ObjectCache::ObjectCache(size_t capacity_bytes) : shard_capacity_(capacity_bytes / kShards) {}

std::string ObjectCache::Key(std::string_view kind, std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(kind.size() + ns.size() + name.size() + 2);
  key.append(kind).push_back('\0');
  key.append(ns).push_back('\0');
  key.append(name);
  return key;
}

std::string ObjectCache::RevisionKey(std::string_view kind, std::string_view ns,
                                     std::string_view name, int64_t revision) {
  std::string key = Key(kind, ns, name);  // names hold no NUL: the third one sets it apart
  key.push_back('\0');
  key.append(std::to_string(revision));
  return key;
}

ObjectCache::Shard& ObjectCache::ShardOf(const std::string& key) {
  return shards_[std::hash<std::string>{}(key) % kShards];
}

ObjectCache::Text ObjectCache::Find(const std::string& key, uint64_t* generation) {
  if (shard_capacity_ == 0) return nullptr;
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.index.find(key);
  if (it == shard.index.end()) {
    *generation = shard.generation;
    ++shard.counts.misses;
    return nullptr;
  }
  shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
  ++shard.counts.hits;
  return it->second->text;
}

void ObjectCache::Fill(const std::string& key, uint64_t generation, std::string_view text) {
  if (shard_capacity_ == 0) return;
  Shard& shard = ShardOf(key);
  auto owned = std::make_shared<const std::string>(text);  // outside the lock
  const size_t cost = CostOf(key, *owned);
  if (cost > shard_capacity_) return;
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.generation != generation) {
    ++shard.counts.fills_refused;
    return;
  }
  if (auto it = shard.index.find(key); it != shard.index.end()) Erase(shard, it->second);
  Insert(shard, key, std::move(owned), cost);
}

void ObjectCache::Invalidate(const std::string& key) {
  if (shard_capacity_ == 0) return;
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  ++shard.generation;
  if (auto it = shard.index.find(key); it != shard.index.end()) Erase(shard, it->second);
}

void ObjectCache::Refresh(const std::string& key, std::string text) {
  if (shard_capacity_ == 0) return;
  Shard& shard = ShardOf(key);
  auto owned = std::make_shared<const std::string>(std::move(text));  // outside the lock
  const size_t cost = CostOf(key, *owned);
  std::lock_guard<std::mutex> lock(shard.mu);
  ++shard.generation;
  auto it = shard.index.find(key);
  if (it == shard.index.end()) return;
  Erase(shard, it->second);
  if (cost <= shard_capacity_) Insert(shard, key, std::move(owned), cost);
}

void ObjectCache::Insert(Shard& shard, const std::string& key, Text text, size_t cost) {
  shard.lru.push_front(Entry{key, std::move(text)});
  shard.index.emplace(shard.lru.front().key, shard.lru.begin());
  shard.bytes += cost;
  while (shard.bytes > shard_capacity_) {
    Erase(shard, std::prev(shard.lru.end()));
    ++shard.counts.evictions;
  }
}

void ObjectCache::Erase(Shard& shard, std::list<Entry>::iterator it) {
  shard.bytes -= CostOf(it->key, *it->text);
  shard.index.erase(it->key);
  shard.lru.erase(it);
}

ObjectCacheStats ObjectCache::Stats() {
  ObjectCacheStats stats;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    stats.hits += shard.counts.hits;
    stats.misses += shard.counts.misses;
    stats.fills_refused += shard.counts.fills_refused;
    stats.evictions += shard.counts.evictions;
    stats.entries += shard.index.size();
    stats.bytes += shard.bytes;
  }
  return stats;
}

}  // namespace gantry::store
