// ObjectCache: hits and misses, invalidation and refresh, the generation that refuses a fill begun
// before an invalidation, the byte bound and its LRU order, and many threads at once.
#include "store/object_cache.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gantry::store {
namespace {

const std::string kA = ObjectCache::Key("ComputeInstance", "ml", "a");
const std::string kB = ObjectCache::Key("ComputeInstance", "ml", "b");

TEST(ObjectCacheTest, KeysOfDifferentObjectsDiffer) {
  EXPECT_NE(ObjectCache::Key("K", "ab", "c"), ObjectCache::Key("K", "a", "bc"));
  EXPECT_NE(ObjectCache::Key("K", "", "a"), ObjectCache::Key("", "K", "a"));
  EXPECT_EQ(ObjectCache::Key("K", "n", "a"), ObjectCache::Key("K", "n", "a"));
}

TEST(ObjectCacheTest, AFilledTextIsFoundUntilInvalidated) {
  ObjectCache cache(1 << 20);
  uint64_t generation = 0;
  EXPECT_EQ(cache.Find(kA, &generation), nullptr);
  cache.Fill(kA, generation, R"({"v":1})");
  ObjectCache::Text text = cache.Find(kA, &generation);
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(*text, R"({"v":1})");
  EXPECT_EQ(cache.Find(kB, &generation), nullptr);

  cache.Invalidate(kA);
  EXPECT_EQ(cache.Find(kA, &generation), nullptr);
  EXPECT_EQ(*text, R"({"v":1})");  // a text handed out stays valid
  ObjectCacheStats stats = cache.Stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 3);
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.bytes, 0u);
}

// A commit's own text replaces a cached entry; an object not cached is not added (much of
// what is written is never read), and a fill begun before the refresh is refused.
TEST(ObjectCacheTest, ARefreshReplacesACachedTextAndAddsNone) {
  ObjectCache cache(1 << 20);
  uint64_t generation = 0;
  ASSERT_EQ(cache.Find(kA, &generation), nullptr);
  cache.Fill(kA, generation, "v1");
  uint64_t before_b = 0;
  ASSERT_EQ(cache.Find(kB, &before_b), nullptr);
  cache.Refresh(kA, "v2");
  cache.Refresh(kB, "b2");
  ObjectCache::Text text = cache.Find(kA, &generation);
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(*text, "v2");
  uint64_t after_b = 0;
  EXPECT_EQ(cache.Find(kB, &after_b), nullptr);
  cache.Fill(kB, before_b, "b1");  // read before the refresh: refused
  EXPECT_EQ(cache.Find(kB, &after_b), nullptr);
  EXPECT_EQ(cache.Stats().fills_refused, 1);
  EXPECT_EQ(cache.Stats().entries, 1u);
  EXPECT_EQ(cache.Stats().bytes, 2 + 2 * kA.size() + 64);
}

// A reader that looked before a commit and read the replaced text must not cache it once
// the commit has invalidated the object.
TEST(ObjectCacheTest, AFillBegunBeforeAnInvalidationIsRefused) {
  ObjectCache cache(1 << 20);
  uint64_t before = 0;
  ASSERT_EQ(cache.Find(kA, &before), nullptr);
  cache.Invalidate(kA);  // the commit of a new version
  cache.Fill(kA, before, "old");
  uint64_t after = 0;
  EXPECT_EQ(cache.Find(kA, &after), nullptr);
  EXPECT_EQ(cache.Stats().fills_refused, 1);
  cache.Fill(kA, after, "new");
  ObjectCache::Text text = cache.Find(kA, &after);
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(*text, "new");
}

TEST(ObjectCacheTest, ZeroCapacityCachesNothing) {
  ObjectCache cache(0);
  uint64_t generation = 0;
  cache.Fill(kA, generation, "x");
  EXPECT_EQ(cache.Find(kA, &generation), nullptr);
  EXPECT_EQ(cache.Stats().entries, 0u);
}

// Over its bytes a shard drops its least recently used entries; what was read lately stays.
TEST(ObjectCacheTest, StaysWithinItsBytesAndKeepsWhatWasReadLately) {
  constexpr size_t kCapacity = 64 * 1024;
  ObjectCache cache(kCapacity);
  const std::string text(200, 'x');
  const std::string hot = ObjectCache::Key("K", "n", "hot");
  uint64_t generation = 0;
  cache.Find(hot, &generation);
  cache.Fill(hot, generation, text);
  for (int i = 0; i < 5000; ++i) {
    std::string key = ObjectCache::Key("K", "n", "o" + std::to_string(i));
    ASSERT_EQ(cache.Find(key, &generation), nullptr);
    cache.Fill(key, generation, text);
    ASSERT_NE(cache.Find(hot, &generation), nullptr) << "after " << i << " others";
  }
  ObjectCacheStats stats = cache.Stats();
  EXPECT_LE(stats.bytes, kCapacity);
  EXPECT_GT(stats.evictions, 0);
  EXPECT_GT(stats.entries, 100u);
  EXPECT_LT(stats.entries, 5000u);
}

TEST(ObjectCacheTest, ATextLargerThanAShardIsNotCached) {
  ObjectCache cache(16 * 1024);  // 1 KiB per shard
  uint64_t generation = 0;
  cache.Find(kA, &generation);
  cache.Fill(kA, generation, std::string(4096, 'x'));
  EXPECT_EQ(cache.Find(kA, &generation), nullptr);
}

// Writers bump a version and invalidate, readers fill from the "database" (an atomic) the way
// the store does: no reader ever finds a version older than the last one acknowledged
// before it looked.
TEST(ObjectCacheTest, NoReaderFindsAVersionOlderThanTheLastAcknowledged) {
  ObjectCache cache(1 << 20);
  std::atomic<int> database{0};
  std::atomic<int> acknowledged{0};
  std::atomic<bool> done{false};
  std::atomic<int> stale{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      while (!done) {
        const int floor = acknowledged.load();
        uint64_t generation = 0;
        int seen;
        if (ObjectCache::Text text = cache.Find(kA, &generation)) {
          seen = std::stoi(*text);
          ++hits;
        } else {
          seen = database.load();  // the transaction begins after Find
          std::this_thread::yield();
          cache.Fill(kA, generation, std::to_string(seen));
        }
        if (seen < floor) ++stale;
      }
    });
  for (int v = 1; v <= 20000; ++v) {
    database = v;  // COMMIT
    // After the commit, before the acknowledgement: the store refreshes what it wrote (or
    // invalidates it, when the commit failed or deleted it).
    if (v % 2)
      cache.Refresh(kA, std::to_string(v));
    else
      cache.Invalidate(kA);
    acknowledged = v;
    if (v % 64 == 0) std::this_thread::yield();
  }
  // On a loaded machine every read may have missed so far; with no more commits, a filled
  // text is found by the next read.
  while (hits.load() == 0) std::this_thread::yield();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(stale.load(), 0);
}

}  // namespace
}  // namespace gantry::store
