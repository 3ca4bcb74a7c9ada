// Device layer: the single-pass scan. A tile is THREADS * ITEMS items; each
// tile is chained to its predecessors through the tile status
// (tile_status.cuh) and the look-back (lookback.cuh, 32 * LOOKBACK
// predecessors per round trip), so the input is read once and the output
// written once: the bytes a copy moves.
//
// Warp-specialised and persistent. A block is THREADS scanning threads plus
// one look-back warp, and the grid about as many blocks as the GPU holds at
// once. The scanning warps never wait for a look-back of the tile they just
// scanned: they leave it in one of STAGES shared-memory slots and go on to
// the next tile, while the look-back warp finds the prefixes of the slots in
// order. A slot is stored once its prefix is known, just before it is
// reused, so a look-back has STAGES - 1 tiles' time to finish. (With the
// whole block waiting at a barrier for each look-back, an H200 ran at 0.70
// of copy speed; loading the next tile early instead, but publishing its
// aggregate only after the look-back, delayed every successor's look-back in
// turn and ran at 0.43: bench/gpu-h200-results.md.)
//
// Scanning warps, per tile (slot k = iteration % STAGES):
//  1. store the tile slot k holds, once the look-back warp has its prefix:
//     each lane rescans its run from the tile's prefix combined with the
//     lane's prefix within the tile, and the warp stores its segment;
//  2. thread 0 claims a tile from the atomic counter, so tiles are numbered
//     in the order blocks ask for them (the last claim resets the counter
//     for the next launch); claiming it earlier, to hide the atomic's round
//     trip behind the store, measured slower (its successors wait longer);
//  3. each warp loads its segment of the tile into slot k; each lane
//     reduces its run (thread), and the warp scans and the warp totals give
//     each lane its prefix within the tile and the tile's aggregate (block);
//  4. thread 0 publishes the aggregate at once (tile 0, and with TileRows a
//     tile that starts a row: its inclusive prefix, or with DETERMINISTIC its
//     aggregate unless it ends its fixed group), and the slot is handed to
//     the look-back warp.
// With EARLY (the policy's early_loads) the order is 2, the loads of 3 into
// registers, 1, then the rest of 3: the loads are in flight while the slot's
// previous tile is stored, and that store rescans in shared memory a vector
// at a time so that the registers stay free for them. On the H200 this took
// f32 add from 0.83 to 0.85 of copy and the f32 recurrence from 0.83 to 0.88;
// 32-byte items, whose loads need the store's registers, went from 0.57 to
// 0.51 and keep the plain order. Fused maps (maps.cuh) fetch a whole
// segment's input arrays into registers instead, a vector per group of
// positions (LiftedIn::fetch), and lift them into the slot after the store
// (or, with narrow slots, narrow.cuh, put them there raw).
// (Starting the next tile's loads a whole
// iteration ahead, with cp.async into a further slot, ran at 0.43 to 0.80:
// a tile's aggregate then comes an iteration after its claim, and its
// successors' look-backs wait that much longer.)
// Look-back warp, per slot in the same order: look back for the tile's
// exclusive prefix, publish its inclusive prefix, hand the slot back.
// Hand-overs are slot barriers (util.cuh, SlotBarriers: mbarriers from
// sm_90, named barriers before): the scanning warps signal READY + k and the
// look-back warp waits there; it signals PREFIXED + k and the scanning warps
// wait there before storing.
//
// Progress never depends on scheduling: a look-back waits only for tiles
// numbered before its own, each claimed by a running block, and a block
// publishes a tile's aggregate before waiting for anything but its own
// earlier tiles.
//
// A reverse scan is the forward scan of the reversed sequence: tile t covers
// the t-th block of items counted from the end, and only the addressing
// changes (exchange.cuh).
//
// A carry joins scans of consecutive pieces of one sequence (the chunks of a
// host transfer, staging.rs): `carry_in`, when not null, is the combined
// total of everything before this piece, and acts as tile 0's exclusive
// prefix; `carry_out`, when not null, receives the total of the carry and
// the whole piece (the last tile's inclusive prefix). Both are read or
// written once per launch.
//
// Segmented scans (rows, flags: heads.cuh): `heads` says where, in scan
// order, a new scan starts; with NoHeads the code below is the plain scan.
// Otherwise the thread and block layers scan Headed<Op> (restarting at each
// head), and a tile that contains a head publishes its inclusive prefix at
// once (the combination from its last head to its end): no look-back waits
// past the first tile of its own segment. A tile looks back only when its
// first position is not a head. The carry is not used. Rows of whole tiles
// (TileRows) take the plain code path instead: no head falls inside a
// tile, and a tile that starts a row (slot_heads[k] bit 0, set by thread 0
// and handed over with slot_tile[k]) starts from no prefix, publishes its
// aggregate as its inclusive prefix (DETERMINISTIC: as an aggregate, unless
// it ends its fixed group) and does not look back; the other tiles look
// back no further than their row's first tile.
//
// `src` and `dst` say where items come from and results go (maps.cuh): item
// arrays, or with fused maps a lift of input arrays and a project into an
// output array. Fused maps whose inputs and output move in the same groups
// of positions (the f32 recurrence a[], b[] -> h[]) take grouped runs when
// the policy says so (grouped.cuh): each lane scans the groups it loaded in
// registers (ITEMS / V warp scans side by side, then the warp totals),
// keeps them in its own part of the slot, and stores them from there once
// the tile's prefix is known; steps 1, 3 and 3b then skip the exchange
// through the slot (two trips through shared memory per position, not
// five) and the slots hold nothing else, so a third stage fits two blocks
// per SM (0.85 -> 0.94 of copy for the recurrence with the fixed groups,
// SinglePassPolicy::grouped_maps_for).
//
// `chaos` != 0 is a test mode: blocks start claiming in an order unrelated to
// their index, and pause at random before publishing (sometimes skipping the
// aggregate), so the look-back meets every mix of statuses. The result must
// not change.

namespace scan {

__device__ __forceinline__ unsigned mix32(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// A pseudo-random pause of 1 to 33 us for about 3 tiles in 8 (chaos mode).
__device__ __forceinline__ void chaos_pause(unsigned chaos, unsigned salt, i64 tile) {
    if (chaos == 0) return;
    const unsigned h = mix32(chaos ^ mix32((unsigned)tile * 2654435761u + salt));
    if ((h & 7u) < 3u) {
        for (unsigned i = 0; i <= (h >> 8) % 32u; ++i) __nanosleep(1000);
    }
}

// Where one warp's segment of a tile lives, and how it moves.
template <class Op, int THREADS, int ITEMS, bool REVERSE>
struct TileSegment {
    typedef WarpExchange<Op, ITEMS, REVERSE> Exchange;
    static constexpr int TILE = THREADS * ITEMS;
    typedef typename Op::Item Item;

    u64 first;      // scan position of the segment's first item
    int valid;      // items of the segment that exist (may be <= 0)
    bool whole;     // the whole tile exists
    u64 base;       // the segment's lowest address when the tile is whole

    __device__ __forceinline__ TileSegment(i64 tile, u64 len) {
        const u64 start = (u64)tile * TILE;
        const int tile_valid = len - start < (u64)TILE ? (int)(len - start) : TILE;
        first = start + (u64)warp_id() * Exchange::SEGMENT;
        valid = tile_valid - (int)warp_id() * Exchange::SEGMENT;
        whole = tile_valid == TILE;
        base = REVERSE ? len - first - Exchange::SEGMENT : first;
    }

    // Whether the segment moves a vector at a time (else item by item).
    __device__ __forceinline__ bool vectors(const Item* p) const { return whole && Exchange::aligned(p + base); }
};

// Shared memory of the kernel beyond its static part: per slot, the warps'
// slices (SLICE_BYTES each: exchange slices, or narrow slices), then each
// scanning thread's prefix within the tile.
template <int THREADS, int STAGES, int SLICE_BYTES>
struct SinglePassSlots {
    static constexpr int WARPS = THREADS / 32;
    static constexpr size_t SLICES_BYTES = (size_t)STAGES * WARPS * SLICE_BYTES;
    static_assert(SLICES_BYTES % 16 == 0, "prefixes start 16-byte aligned");
};

template <class Op, int THREADS, int ITEMS, int LOOKBACK, int STAGES, bool EARLY, bool DETERMINISTIC, bool REVERSE,
          bool INCLUSIVE, class In, class Out, class Status, class Heads>
__device__ __forceinline__ void single_pass(In src, Out dst, u64 len,
                                            const typename Op::Item* carry_in, typename Op::Item* carry_out,
                                            u64* counter, Status status, unsigned epoch, unsigned chaos,
                                            Heads heads, unsigned char* shared) {
    typedef typename Op::Item Item;
    typedef WarpExchange<Op, ITEMS, REVERSE> Exchange;
    typedef TileSegment<Op, THREADS, ITEMS, REVERSE> Segment;
    typedef typename Exchange::Word Word;
    typedef NarrowSlice<Op, ITEMS, REVERSE, In, Out> Narrow;
    constexpr int WARPS = THREADS / 32;
    constexpr int TILE = THREADS * ITEMS;
    constexpr unsigned ALL = THREADS + 32;  // the scanning threads and the look-back warp
    // A named barrier for the scanning threads alone (id 1); slot barriers,
    // per slot: READY + k, then PREFIXED + k (named barriers 2 and up before
    // sm_90).
    constexpr unsigned SCANNERS = 1, READY = 0, PREFIXED = STAGES;
    constexpr bool SEGMENTED = !Heads::NONE;
    // Fused maps from one narrow array into a narrow output, every segment
    // through narrow slots (narrow.cuh), when the policy says so.
    constexpr bool NARROW = !SEGMENTED && In::NARROW_BYTES > 0;
    static_assert(!NARROW || Narrow::USABLE, "narrow slots: one array and an output of one 16-byte group's width");
    // Fused maps whose inputs and output move in the same groups of
    // positions: each lane keeps its own groups (grouped.cuh) when the
    // policy says so, which sizes the slots for them.
    typedef GroupedRun<Op, ITEMS, REVERSE, In, Out> Grouped;
    constexpr bool GROUPED = In::GROUPED;
    static_assert(!GROUPED || (Grouped::USABLE && !SEGMENTED && !NARROW),
                  "the policy sets grouped runs only where the maps allow them");
    constexpr int SLICE_BYTES = NARROW    ? Narrow::SLICE_BYTES
                                : GROUPED ? Grouped::SLICE_BYTES
                                          : Exchange::SHARED_WORDS * (int)sizeof(Word);
    // Rows of whole tiles (heads.cuh, TileRows): the plain path, and slot
    // k's bit 0 of slot_heads says that its tile starts a row.
    constexpr bool TILE_ROWS = Heads::TILE_ROWS;
    static_assert(!(DETERMINISTIC && SEGMENTED),
                  "the deterministic look-back serves plain scans and rows of whole tiles");
    // Deterministic: only the last tile of each group of GROUP publishes its
    // inclusive prefix (lookback.cuh, lookback_fixed); with rows of whole
    // tiles the groups stay where they are, and a tile looks back no further
    // than its row's first tile.
    constexpr i64 GROUP = 32 * LOOKBACK;
    typedef BlockScan<typename If<SEGMENTED, Headed<Op>, Op>::type, THREADS, SCANNERS> Block;
    static_assert(ITEMS <= 64, "a run's heads are one 64-bit mask");
    static_assert(STAGES >= 1 && STAGES <= 4, "1 to 4 slots");
    Item* const withins = reinterpret_cast<Item*>(shared + SinglePassSlots<THREADS, STAGES, SLICE_BYTES>::SLICES_BYTES);

    __shared__ typename Block::Shared block;
    __shared__ i64 claimed[2];                // the tiles thread 0 claimed last, alternately
    __shared__ i64 slot_tile[STAGES];         // the tile each slot holds
    __shared__ Slot<Item> slot_aggregate[STAGES], slot_prefix[STAGES];
    // Segmented: per slot, bit 0: the tile's first position is a head; bit 1:
    // the tile contains a head; and per warp, which lanes have a head before
    // their run within the tile. Rows of whole tiles: bit 0 alone.
    __shared__ unsigned slot_heads[STAGES];
    __shared__ unsigned heads_before[SEGMENTED ? STAGES * WARPS : 1];
    __shared__ SlotBarriers<2 * STAGES, 2> handover;

    // Segments from starts found bad (heads.cuh, BitHeads): nothing is
    // written; every thread returns before any barrier or claim.
    if (heads.refused()) return;
    handover.init(ALL);
    const i64 tiles = (i64)((len + TILE - 1) / TILE);
    const int warp = (int)warp_id();

    if (warp == WARPS) {
        // The look-back warp.
        for (unsigned i = 0;; ++i) {
            const int k = (int)(i % STAGES);
            handover.wait(READY + k, ALL);
            const i64 tile = slot_tile[k];
            if (tile >= tiles) return;
            // Segmented, a tile that starts a segment has no prefix to find.
            if (tile != 0 && !((SEGMENTED || TILE_ROWS) && (slot_heads[k] & 1u))) {
                // The first tile of this tile's scan: its row's, or tile 0.
                i64 scan_start = 0;
                if constexpr (TILE_ROWS) scan_start = heads.template first_tile<TILE>(tile);
                const Item before = DETERMINISTIC
                                        ? lookback_fixed<Op, LOOKBACK>(status, tile, epoch, carry_in, scan_start)
                                        : lookback<Op, LOOKBACK>(status, tile, epoch, scan_start);
                if (lane_id() == 0) {
                    chaos_pause(chaos, 2, tile);
                    const Item inclusive = Op::combine(before, slot_aggregate[k].get());
                    if (SEGMENTED) {
                        // A tile with a head published its prefix already.
                        if (!(slot_heads[k] & 2u) && tile + 1 < tiles)
                            status.publish(tile, status_code(epoch, STATUS_PREFIX), inclusive);
                    } else if (tile + 1 < tiles) {
                        if (!DETERMINISTIC || tile % GROUP == GROUP - 1)
                            status.publish(tile, status_code(epoch, STATUS_PREFIX), inclusive);
                    } else if (carry_out != nullptr) {
                        *carry_out = inclusive;
                    }
                    slot_prefix[k].get() = before;
                }
            }
            __syncwarp();
            handover.signal(PREFIXED + k, ALL);
        }
    }

    // The scanning warps. This warp's slice of slot `k`:
    auto slice = [=](int k) -> Word* {
        return reinterpret_cast<Word*>(shared + ((size_t)k * WARPS + warp) * SLICE_BYTES);
    };
    // The next tile for this block, or `tiles` when there is none (thread 0).
    bool exhausted = false;
    auto claim = [&]() -> i64 {
        if (exhausted) return tiles;
        i64 t = 0;
        if (counter == nullptr) {
            exhausted = true;  // one tile: nothing to count
        } else {
            t = (i64)atomicAdd(counter, 1ull);
            // Every block claims until it is refused once: tiles + gridDim.x
            // claims in all, and the last one resets the counter.
            if (t == tiles + (i64)gridDim.x - 1) atomicExch(counter, 0ull);
            exhausted = t >= tiles;
        }
        return t < tiles ? t : tiles;
    };
    // Plain: whether tile `tile` (in slot `k`) has no prefix at all: tile 0
    // without a carry, or a tile that starts a row of whole tiles.
    auto starts_alone = [&](int k, i64 tile) -> bool {
        return (tile == 0 && carry_in == nullptr) || (TILE_ROWS && (slot_heads[k] & 1u));
    };
    // The rescan of this lane's run in slot `k` (tile `tile`) from `within`,
    // its prefix within the tile, and the tile's prefix, in registers.
    // Segmented: where this lane's rescan in slot `k` starts from, given
    // `within`, its prefix within the tile: the tile's prefix joins unless a
    // head lies between the tile's start and the lane's run, or the tile
    // starts with a head (no look-back ran).
    auto rescan_from = [&](int k, i64 tile, const Item within) -> Item {
        const bool head_before = (heads_before[k * WARPS + warp] >> lane_id()) & 1u;
        const bool prefixed = tile != 0 && !(slot_heads[k] & 1u);  // the look-back ran
        return prefixed && !head_before ? Op::combine(slot_prefix[k].get(), within) : within;
    };
    // Fused maps: whether the segment moves in whole groups of positions
    // (maps.cuh): whole, contiguous, and every input array aligned for them.
    auto whole_groups = [&](const Segment& seg) -> bool {
        if constexpr (In::FETCHES) {
            return heads.contiguous() && seg.whole && src.template groups_aligned<ITEMS>(seg.base);
        } else {
            return false;
        }
    };
    auto rescan_in_registers = [&](int k, i64 tile, const Segment& seg, Word* buf, const Item within) {
        Item run[ITEMS];
        Exchange::read_run(buf, run);
        if constexpr (SEGMENTED) {
            const u64 mask = heads.template run<ITEMS, REVERSE>(seg.first + lane_id() * ITEMS);
            thread_scan_heads<Op, ITEMS, INCLUSIVE>(run, rescan_from(k, tile, within), mask);
        } else {
            const bool first = starts_alone(k, tile);  // no prefix at all
            thread_scan<Op, ITEMS, INCLUSIVE>(run, first ? within : Op::combine(slot_prefix[k].get(), within));
        }
        Exchange::write_run(buf, run);
    };
    // 1. Stores the tile in slot `k` once the look-back warp has its prefix.
    auto store = [&](int k) {
        handover.wait(PREFIXED + k, ALL);
        const i64 tile = slot_tile[k];
        const Segment seg(tile, len);
        auto index = [=](int p) -> u64 { return heads.memory(REVERSE ? len - 1 - (seg.first + p) : seg.first + p); };
        Word* buf = slice(k);
        if constexpr (GROUPED) {
            // Each lane reads back only what it put: no __syncwarp needed.
            const bool alone = starts_alone(k, tile);
            const Item prefix = slot_prefix[k].get();  // (not used when alone)
            const unsigned char* raw = reinterpret_cast<const unsigned char*>(buf);
            if (seg.whole && dst.template groups_aligned<ITEMS>(seg.base)) {
                Grouped::store(dst, seg.base, raw, alone, prefix);
            } else {
                Grouped::store_items(dst, index, seg.valid, raw, alone, prefix);
            }
            return;
        }
        const Item within = withins[k * THREADS + threadIdx.x];
        if constexpr (NARROW) {
            // Positions past the end are rescanned too (after every existing
            // one in scan order), but not stored.
            unsigned char* raw = reinterpret_cast<unsigned char*>(buf);
            const bool first = starts_alone(k, tile);
            Narrow::template rescan_project<INCLUSIVE>(raw, first ? within : Op::combine(slot_prefix[k].get(), within));
            __syncwarp();
            if (seg.whole && dst.template groups_aligned<ITEMS>(seg.base)) {
                Narrow::store(dst.p + seg.base, raw);
            } else {
                Narrow::store_items(dst, index, seg.valid, raw);
            }
            __syncwarp();  // before the slice is loaded again
            return;
        }
        if constexpr (EARLY && Exchange::WHOLE_ITEMS_PER_VECTOR) {
            // The same rescan a vector at a time, in shared memory: the
            // registers hold the next tile's loads in flight.
            if constexpr (SEGMENTED) {
                const u64 mask = heads.template run<ITEMS, REVERSE>(seg.first + lane_id() * ITEMS);
                Exchange::template scan_run_in_place_heads<INCLUSIVE>(buf, rescan_from(k, tile, within), mask);
            } else {
                const bool first = starts_alone(k, tile);
                Exchange::template scan_run_in_place<INCLUSIVE>(
                    buf, first ? within : Op::combine(slot_prefix[k].get(), within));
            }
        } else {
            rescan_in_registers(k, tile, seg, buf, within);
        }
        __syncwarp();
        bool stored = false;
        if constexpr (Out::DIRECT) {
            stored = heads.contiguous() && seg.vectors(dst.p);
            if (stored) Exchange::store_vectors(dst.p + seg.base, buf);
        } else {
            stored = heads.contiguous() && seg.whole && dst.template groups_aligned<ITEMS>(seg.base);
            if (stored) Exchange::store_projected(dst, seg.base, buf);
        }
        if (!stored) Exchange::store_items(dst, index, seg.valid, buf);
        __syncwarp();  // before the slice is loaded again
    };

    // 3. Loads this warp's segment of `tile` into slot `k`; scan position p
    // of the segment is global index `index(p)`.
    auto load = [&](int k, i64 tile) {
        const Segment seg(tile, len);
        auto index = [=](int p) -> u64 { return heads.memory(REVERSE ? len - 1 - (seg.first + p) : seg.first + p); };
        Word* buf = slice(k);
        if constexpr (NARROW) {
            unsigned char* raw = reinterpret_cast<unsigned char*>(buf);
            if (whole_groups(seg)) {
                typename In::template Fetched<ITEMS> f;
                src.template fetch<ITEMS>(seg.base, f);
                Narrow::put(f, raw);
            } else {
                Narrow::load_items(src, index, seg.valid, raw);
            }
            return;
        }
        bool loaded = false;
        if constexpr (In::DIRECT) {
            loaded = heads.contiguous() && seg.vectors(src.p);
            if (loaded) Exchange::load_vectors(src.p + seg.base, buf);
        } else if constexpr (In::template FITS<Exchange::SEGMENT>) {
            loaded = heads.contiguous() && seg.whole && src.aligned(seg.base);
            if (loaded) Exchange::load_staged(src, seg.base, buf);
        } else if constexpr (In::FETCHES) {
            loaded = whole_groups(seg);
            if (loaded) {
                typename In::template Fetched<ITEMS> f;
                src.template fetch<ITEMS>(seg.base, f);
                Exchange::put_lifted(src, f, buf);
            }
        }
        if (!loaded) Exchange::load_items(src, index, seg.valid, buf);
    };
    // 4. Publishes the aggregate of `tile` (in slot `k`) and hands the slot
    // over; `tile_heads`: what a segmented tile keeps in slot_heads[k].
    auto publish = [&](int k, i64 tile, const Item& aggregate, unsigned tile_heads) {
        if (threadIdx.x == 0) {
            slot_tile[k] = tile;
            slot_aggregate[k].get() = aggregate;
            // Rows of whole tiles: a tile other than 0 that starts a row.
            bool row_start = false;
            if constexpr (TILE_ROWS) {
                row_start = tile != 0 && heads.template starts<TILE>(tile);
                slot_heads[k] = row_start ? 1u : 0u;
            }
            if (SEGMENTED) {
                slot_heads[k] = tile_heads;
                if (tile_heads & 2u) {
                    // Its inclusive prefix: from its last head to its end.
                    chaos_pause(chaos, 1, tile);
                    if (tile + 1 < tiles) status.publish(tile, status_code(epoch, STATUS_PREFIX), aggregate);
                } else if (!(chaos && (mix32(chaos + (unsigned)tile) & 15u) == 0)) {
                    chaos_pause(chaos, 1, tile);
                    status.publish(tile, status_code(epoch, STATUS_AGGREGATE), aggregate);
                }
            } else if (tile == 0 || row_start) {
                // Tile 0's exclusive prefix is the carry, if any; a tile that
                // starts a row has none (rows take no carry).
                Item inclusive = aggregate;
                if (tile == 0 && carry_in != nullptr) {
                    slot_prefix[k].get() = *carry_in;
                    inclusive = Op::combine(slot_prefix[k].get(), aggregate);
                }
                if (tile + 1 < tiles) {
                    // Deterministic: tile 0 is one of its group's aggregates
                    // (the carry joins in each look-back, lookback_fixed);
                    // a row's first tile too, unless it ends its group,
                    // whose inclusive prefix the next group reads.
                    if (DETERMINISTIC && tile % GROUP != GROUP - 1) {
                        status.publish(tile, status_code(epoch, STATUS_AGGREGATE), aggregate);
                    } else {
                        status.publish(tile, status_code(epoch, STATUS_PREFIX), inclusive);
                    }
                } else if (carry_out != nullptr) {
                    *carry_out = inclusive;
                }
            } else if (DETERMINISTIC || !(chaos && (mix32(chaos + (unsigned)tile) & 15u) == 0)) {
                // (chaos: sometimes no aggregate, but a deterministic scan's
                // readers need every aggregate of their group.)
                chaos_pause(chaos, 1, tile);
                status.publish(tile, status_code(epoch, STATUS_AGGREGATE), aggregate);
            }
        }
        handover.signal(READY + k, ALL);
    };
    // 3b and 4. Scans the tile that slot `k` holds (loaded, and visible to
    // the whole warp), publishes its aggregate and hands the slot over.
    auto scan_and_publish = [&](int k, i64 tile) {
        const Segment seg(tile, len);
        Word* buf = slice(k);
        Item run[ITEMS];
        Item aggregate;
        unsigned tile_heads = 0;  // segmented: slot_heads[k]
        if constexpr (SEGMENTED) {
            Exchange::read_run(buf, run);
            const u64 mask = heads.template run<ITEMS, REVERSE>(seg.first + lane_id() * ITEMS);
            typename Headed<Op>::Item total;
            const typename Headed<Op>::Item within =
                Block::exclusive(thread_reduce_heads<Op, ITEMS>(run, mask), total, block);
            withins[k * THREADS + threadIdx.x] = within.value;
            const unsigned before = __ballot_sync(0xffffffffu, within.head != 0);
            if (lane_id() == 0) heads_before[k * WARPS + warp] = before;
            aggregate = total.value;
            tile_heads = (unsigned)(mask & 1u) | (total.head ? 2u : 0u);  // thread 0's run starts the tile
        } else {
            Item reduced;
            if constexpr (NARROW) {
                const unsigned char* raw = reinterpret_cast<const unsigned char*>(buf);
                reduced = seg.valid >= Exchange::SEGMENT ? Narrow::reduce(raw) : Narrow::reduce_valid(raw, seg.valid);
            } else {
                Exchange::read_run(buf, run);
                reduced = thread_reduce<Op, ITEMS>(run);
            }
            withins[k * THREADS + threadIdx.x] = Block::exclusive(reduced, aggregate, block);
        }

        publish(k, tile, aggregate, tile_heads);
    };
    // Grouped runs (grouped.cuh): scans this lane's positions of `tile` in
    // registers, keeps them in the slot (only this lane reads them, in
    // `store`; before publishing, so that they are not held across it),
    // publishes the aggregate and hands the slot over.
    // (Lambda bodies are instantiated with the kernel: `if constexpr` keeps
    // kernels without grouped runs from naming what their inputs lack.)
    auto scan_grouped_and_publish = [&](int k, i64 tile, Item (&x)[ITEMS]) {
        if constexpr (GROUPED) {
            Item aggregate;
            Grouped::template scan<INCLUSIVE, Block>(x, aggregate, block);
            Grouped::put(x, reinterpret_cast<unsigned char*>(slice(k)));
            publish(k, tile, aggregate, 0u);
        }
    };
    // Grouped runs: this lane's positions of the segment, read element by
    // element unless the segment moves in whole groups.
    auto load_grouped = [&](const Segment& seg, Item (&x)[ITEMS]) {
        if constexpr (!GROUPED) {
            return;
        } else if (whole_groups(seg)) {
            typename In::template Fetched<ITEMS> f;
            src.template fetch<ITEMS>(seg.base, f);
            Grouped::lift(src, f, x);
        } else {
            auto index = [=](int p) -> u64 {
                return heads.memory(REVERSE ? len - 1 - (seg.first + p) : seg.first + p);
            };
            Grouped::load_items(src, index, seg.valid, x);
        }
    };
    // 2. Thread 0 claims a tile for the block; every scanning thread gets it.
    // Claims alternate between two words: before a word is written again,
    // every scanning thread has read it and passed a block scan's barriers.
    auto claim_for_block = [&](unsigned parity) -> i64 {
        if (threadIdx.x == 0) claimed[parity & 1u] = claim();
        barrier_sync(SCANNERS, THREADS);
        return claimed[parity & 1u];
    };
    // No tile left: tells the look-back warp, which meets slot k in order, to stop.
    auto finish = [&](int k) {
        if (threadIdx.x == 0) slot_tile[k] = tiles;
        handover.signal(READY + k, ALL);
    };

    if (chaos && threadIdx.x == 0) {
        const unsigned late = (gridDim.x - 1u - blockIdx.x) % 16u;
        for (unsigned i = 0; i < late; ++i) __nanosleep(2000);
    }
    unsigned i = 0;
    if constexpr (EARLY) {
        // The loads of a tile are issued before the store of the slot's
        // previous tile, so that they are in flight while it is stored.
        for (;; ++i) {
            const int k = (int)(i % STAGES);
            const i64 tile = claim_for_block(i);
            if (tile >= tiles) {
                if (i >= STAGES) store(k);
                barrier_sync(SCANNERS, THREADS);  // every warp has read slot_tile[k]
                finish(k);
                break;
            }
            const Segment seg(tile, len);
            if constexpr (GROUPED) {
                Item x[ITEMS];
                if constexpr (In::FETCHES_EARLY) {
                    // The loads of a whole segment in flight across the store.
                    const bool whole = whole_groups(seg);
                    typename In::template Fetched<ITEMS> f;
                    if (whole) src.template fetch<ITEMS>(seg.base, f);
                    if (i >= STAGES) store(k);
                    if (whole) {
                        Grouped::lift(src, f, x);
                    } else {
                        load_grouped(seg, x);
                    }
                } else {
                    if (i >= STAGES) store(k);
                    load_grouped(seg, x);
                }
                scan_grouped_and_publish(k, tile, x);
                continue;
            }
            bool vectors = false, fetched = false;
            typename Exchange::Vec v[Exchange::VECTORS_PER_RUN];
            typename In::template Fetched<ITEMS> f;  // fused maps: the inputs of a whole segment
            if constexpr (In::DIRECT) {
                vectors = heads.contiguous() && seg.vectors(src.p);
                if (vectors) Exchange::fetch_vectors(src.p + seg.base, v);
            } else if constexpr (In::FETCHES_EARLY) {
                fetched = whole_groups(seg);
                if (fetched) src.template fetch<ITEMS>(seg.base, f);
            }
            if (i >= STAGES) store(k);
            if (vectors) {
                Exchange::put_vectors(v, slice(k));
            } else if (fetched) {
                if constexpr (NARROW) {
                    Narrow::put(f, reinterpret_cast<unsigned char*>(slice(k)));
                } else if constexpr (In::FETCHES_EARLY) {
                    Exchange::put_lifted(src, f, slice(k));
                }
            } else {
                load(k, tile);
            }
            __syncwarp();
            scan_and_publish(k, tile);
        }
    } else {
        for (;; ++i) {
            const int k = (int)(i % STAGES);
            if (i >= STAGES) store(k);

            // 2. Claim, only now: a tile's successors wait for its aggregate, so
            // a block claims no tile before it can load it. (slot_tile[k] is
            // written only after this barrier, which every scanning thread
            // reaches after reading it in store(k).)
            const i64 tile = claim_for_block(i);
            if (tile >= tiles) {
                finish(k);
                break;
            }
            if constexpr (GROUPED) {
                Item x[ITEMS];
                load_grouped(Segment(tile, len), x);
                scan_grouped_and_publish(k, tile, x);
            } else {
                load(k, tile);
                __syncwarp();
                scan_and_publish(k, tile);
            }
        }
    }
    // The tiles still in their slots, oldest first.
    for (unsigned j = i >= STAGES - 1 ? i - (STAGES - 1) : 0; j < i; ++j) store((int)(j % STAGES));
}

}  // namespace scan
