// ObjectCache: the stored text of recently read objects, by kind, namespace and name (and of
// the immutable revisions of versioned objects, by RevisionKey), so that
// a read of an object already read costs a hash lookup instead of a database transaction
// (on SQLite: the reader connection, the WAL read lock and its two fcntl calls, the B-tree
// walk). The store that owns it fills it on a read and invalidates an object's entry after a
// transaction that wrote it commits, before that write is acknowledged; it is only correct
// for a store that sees every write to its database (the SQLite store: gantryd holds the data
// directory's lock). A PostgreSQL store shared by replicas cannot use it as it is.
//
// Why a read never brings back what a commit replaced: a reader takes its shard's generation
// (Find) before it starts its database transaction, and Fill stores the text only if the
// generation has not moved since. Invalidate moves it, after the commit. Either the reader's
// transaction began after the commit (it read the new text), or the commit's Invalidate comes
// after the reader's Find: then it either refuses the Fill (generation moved) or erases what
// the Fill stored. Refresh moves the generation as Invalidate does; the text it keeps is the
// commit's own, so it is as new as a read after the commit would be (commits are serial).
//
// Bounded by bytes (the texts and their keys): a shard over its share evicts its least
// recently used entries. 16 shards, each with its own mutex, so that the I/O threads reading
// different objects rarely wait for each other. A capacity of 0 turns the cache off.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"

namespace gantry::store {

struct ObjectCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t fills_refused = 0;  // a commit invalidated the shard while the reader read
  int64_t evictions = 0;
  size_t entries = 0;
  size_t bytes = 0;
};

class ObjectCache {
 public:
  using Text = std::shared_ptr<const std::string>;

  explicit ObjectCache(size_t capacity_bytes);
  ObjectCache(const ObjectCache&) = delete;
  ObjectCache& operator=(const ObjectCache&) = delete;

  // The key of one object.
  static std::string Key(std::string_view kind, std::string_view ns, std::string_view name);
  // The key of revision `revision` of an object. A revision never changes while its object
  // lives, but the object's delete takes its revisions along and a later object of the same
  // name numbers its own from 1 again: the store invalidates these keys with the delete.
  static std::string RevisionKey(std::string_view kind, std::string_view ns, std::string_view name,
                                 int64_t revision);

  // The cached text of `key`, or null; on a miss, `*generation` is what Fill must be given.
  Text Find(const std::string& key, uint64_t* generation);
  // Caches `text` as read by a transaction begun after the Find that gave `generation`,
  // unless an Invalidate of the shard came between.
  void Fill(const std::string& key, uint64_t generation, std::string_view text);
  // Forgets `key` and refuses the fills of reads begun before: call after the commit that
  // wrote it, before acknowledging the write.
  void Invalidate(const std::string& key);
  // As Invalidate, but an object already cached keeps its entry, now `text`: what the commit
  // that just wrote it stored. An object not cached stays so (much of what is written is not
  // read again: audit events, usage intervals). Call where Invalidate would be called.
  void Refresh(const std::string& key, std::string text);

  ObjectCacheStats Stats();

 private:
  static constexpr size_t kShards = 16;
  struct Entry {
    std::string key;
    Text text;
  };
  struct Shard {
    std::mutex mu;
    std::list<Entry> lru ABSL_GUARDED_BY(mu);  // front: the most recently used
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index ABSL_GUARDED_BY(mu);
    uint64_t generation ABSL_GUARDED_BY(mu) = 0;
    size_t bytes ABSL_GUARDED_BY(mu) = 0;
    // Counted under the shard's lock, already held, rather than in atomics that every
    // thread's reads would write to.
    ObjectCacheStats counts ABSL_GUARDED_BY(mu);
  };
  Shard& ShardOf(const std::string& key);
  // Adds an entry not in the shard (`cost`: CostOf it) and evicts down to the capacity.
  void Insert(Shard& shard, const std::string& key, Text text, size_t cost)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  void Erase(Shard& shard, std::list<Entry>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  const size_t shard_capacity_;  // bytes per shard; 0: off
  std::array<Shard, kShards> shards_;
};

}  // namespace gantry::store
