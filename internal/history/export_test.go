package history

import "time"

// What the tests of package history_test (which list and import the
// real CLIs' stores, and so import their packages) need of its insides.
var (
	MaxLine        = &maxLine
	MaxCachedHeads = &maxCachedHeads
	MaxExpanded    = &maxExpanded
)

const (
	CacheUnused      = cacheUnused
	HeadCacheVersion = headCacheVersion
)

type (
	HeadCacheData = headCacheFile
	CachedHead    = cachedHead
)

// SetNow sets the cache's clock.
func (hc *HeadCache) SetNow(now func() time.Time) { hc.now = now }
