//! Tiles shared by every route to the same goal, per size class, under a memory budget — the
//! huge-map counterpart of [`FieldCache`](crate::FieldCache), with its conventions: the cache
//! owns the map, edits go through it, goals are cells, size classes are inflated maps.

use glam::UVec2;

use super::{FlowTiles, RouteSearch, SectorError, SectorGraph};
use crate::cost::{CostEdit, CostField, CostModel};
use crate::live::{CacheStats, FieldKey, SizeClass};

#[derive(Debug, Clone)]
struct Entry {
    key: FieldKey,
    tiles: FlowTiles,
    last_used: u64,
}

#[derive(Debug, Clone)]
struct Class {
    radius: f32,
    /// The inflated map (`None` for class 0, which moves on the map itself).
    cost: Option<CostField>,
    graph: SectorGraph,
}

/// What [`TileCache::apply_edits`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TileEditReport {
    /// Cells of the map whose cost changed.
    pub changed_cells: usize,
    /// Sectors rebuilt, over all size classes' graphs.
    pub sectors_rebuilt: usize,
    /// The goals whose tiles were dropped because an edit touched them: routes to these are
    /// stale and are asked for again with [`TileCache::route`].
    pub dropped: Vec<FieldKey>,
}

/// Sector graphs (one per size class) and the flow-field tiles built towards each goal, shared
/// by every route to that goal, kept under a memory budget with least-recently-used eviction.
///
/// Memory: the map and one inflated map per extra size class (1 byte per cell each), one
/// [`SectorGraph`] per class (about 2–3 bytes per cell), and the tiles (9 bytes per cell of each
/// tile, 4 per sector per goal). The budget counts the tiles.
///
/// ```
/// use glam::UVec2;
/// use horde::sectors::TileCache;
/// use horde::{CostEdit, CostModel, SizeClass, WALL};
/// let map = horde::maps::demo_map();
/// let mut cache = TileCache::new(map, CostModel::TenFourteen, 16, 1 << 20).unwrap();
/// let goal = UVec2::new(125, 125);
/// let key = cache.route(UVec2::new(2, 2), goal, SizeClass(0)).unwrap().expect("reachable");
/// let first = cache.tiles(key).unwrap().tile_count();
/// // A second route to the same goal joins the tiles already there.
/// cache.route(UVec2::new(4, 100), goal, SizeClass(0)).unwrap();
/// assert!(cache.tiles(key).unwrap().tile_count() < 2 * first);
/// // A wall on the tiles' way: they are dropped, and the report says whose.
/// let step = cache.tiles(key).unwrap().next_cell(UVec2::new(2, 2)).unwrap();
/// let report = cache.apply_edits(&[CostEdit::Cell { cell: step, cost: WALL }]).unwrap();
/// assert_eq!(report.dropped, vec![key]);
/// assert!(cache.tiles(key).unwrap().tile_count() == 0);
/// ```
#[derive(Debug, Clone)]
pub struct TileCache {
    model: CostModel,
    side: u32,
    map: CostField,
    classes: Vec<Class>,
    entries: Vec<Entry>,
    budget_bytes: usize,
    clock: u64,
    stats: CacheStats,
    search: RouteSearch,
}

impl TileCache {
    /// A cache over `map` with sectors of `side` cells, whose tiles may use up to `budget_bytes`
    /// (the goal just asked for is always kept). Builds the map's sector graph.
    pub fn new(
        map: CostField,
        model: CostModel,
        side: u32,
        budget_bytes: usize,
    ) -> Result<TileCache, SectorError> {
        let graph = SectorGraph::build(&map, side, model)?;
        Ok(TileCache {
            model,
            side,
            classes: vec![Class {
                radius: 0.0,
                cost: None,
                graph,
            }],
            map,
            entries: Vec::new(),
            budget_bytes,
            clock: 0,
            stats: CacheStats::default(),
            search: RouteSearch::new(),
        })
    }

    /// Add a size class for agents of radius `radius` cells: the map with walls inflated by it
    /// ([`CostField::inflated`]) and its own sector graph.
    pub fn add_size_class(&mut self, radius: f32) -> Result<SizeClass, SectorError> {
        if self.classes.len() > u8::MAX as usize {
            return Err(SectorError::UnknownClass(u8::MAX));
        }
        let cost = self.map.inflated(radius)?;
        let graph = SectorGraph::build(&cost, self.side, self.model)?;
        self.classes.push(Class {
            radius,
            cost: Some(cost),
            graph,
        });
        Ok(SizeClass((self.classes.len() - 1) as u8))
    }

    /// The map as edited so far.
    pub fn map(&self) -> &CostField {
        &self.map
    }

    /// The map a size class moves on (the map itself for class 0).
    pub fn class_map(&self, class: SizeClass) -> Result<&CostField, SectorError> {
        Ok(self.class(class)?.cost.as_ref().unwrap_or(&self.map))
    }

    /// The sector graph of a size class.
    pub fn graph(&self, class: SizeClass) -> Result<&SectorGraph, SectorError> {
        Ok(&self.class(class)?.graph)
    }

    /// Hits, builds (goals whose tiles were started) and evictions so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Bytes held by the cached tiles (what the budget counts).
    pub fn memory_bytes(&self) -> usize {
        self.entries.iter().map(|e| e.tiles.memory_bytes()).sum()
    }

    /// The tiles towards `key`'s goal, if cached.
    pub fn tiles(&self, key: FieldKey) -> Option<&FlowTiles> {
        self.entries.iter().find(|e| e.key == key).map(|e| &e.tiles)
    }

    /// Route from `start` to `goal` for `class` and make sure the tiles along it are built
    /// (joining those already built towards that goal); `None` when the goal cannot be reached.
    /// The goal's tiles are marked used, and the least recently used others are evicted while
    /// over budget. Cost: one route, plus a search per new tile (the goal's tile is taken from
    /// the route's own search of the goal's sector).
    pub fn route(
        &mut self,
        start: UVec2,
        goal: UVec2,
        class: SizeClass,
    ) -> Result<Option<FieldKey>, SectorError> {
        let key = FieldKey { goal, class };
        self.class(class)?;
        let c = &self.classes[class.0 as usize];
        let cost = c.cost.as_ref().unwrap_or(&self.map);
        let Some(route) = self.search.route(&c.graph, cost, start, goal)? else {
            return Ok(None);
        };
        self.clock += 1;
        let at = match self.entries.iter().position(|e| e.key == key) {
            Some(i) => {
                self.stats.hits += 1;
                i
            }
            None => {
                self.stats.builds += 1;
                self.entries.push(Entry {
                    key,
                    tiles: FlowTiles::new(&c.graph, cost, goal)?,
                    last_used: 0,
                });
                self.entries.len() - 1
            }
        };
        let entry = &mut self.entries[at];
        entry.last_used = self.clock;
        entry
            .tiles
            .extend_reusing(&c.graph, cost, &route, &self.search)?;
        self.stats.evictions += crate::live::evict_least_recent(
            &mut self.entries,
            self.budget_bytes,
            |e| e.key == key,
            |e| e.last_used,
            |e| e.tiles.memory_bytes(),
        );
        Ok(Some(key))
    }

    /// Edit the map, bring every size class's map and sector graph up to date, and drop the
    /// tiles an edit touched (listed in the report, so their routes can be asked for again).
    /// All edits are checked before any is applied. Cost: the edited area, the rebuilt sectors,
    /// and O(sectors) per graph for its numbering and labels.
    pub fn apply_edits(&mut self, edits: &[CostEdit]) -> Result<TileEditReport, SectorError> {
        let changed = self.map.apply_edits(edits)?;
        let mut report = TileEditReport {
            changed_cells: changed.len(),
            ..TileEditReport::default()
        };
        if changed.is_empty() {
            return Ok(report);
        }
        for (k, class) in self.classes.iter_mut().enumerate() {
            let cells = match &mut class.cost {
                None => changed.clone(),
                Some(inflated) => self.map.reinflate(class.radius, &changed, inflated),
            };
            if cells.is_empty() {
                continue;
            }
            let cost = class.cost.as_ref().unwrap_or(&self.map);
            let rects: Vec<(UVec2, UVec2)> = cells.iter().map(|&c| (c, c)).collect();
            let update = class.graph.update(cost, &rects)?;
            report.sectors_rebuilt += update.sectors.len();
            for e in self
                .entries
                .iter_mut()
                .filter(|e| e.key.class.0 as usize == k)
            {
                let goal_walled = !cost.is_walkable(e.key.goal);
                if e.tiles.forget_stale(&update) || goal_walled {
                    report.dropped.push(e.key);
                }
            }
        }
        // Tiles whose goal is now a wall lead nowhere: they go.
        let (map, classes) = (&self.map, &self.classes);
        self.entries.retain(|e| {
            let class = &classes[e.key.class.0 as usize];
            class.cost.as_ref().unwrap_or(map).is_walkable(e.key.goal)
        });
        Ok(report)
    }

    fn class(&self, class: SizeClass) -> Result<&Class, SectorError> {
        self.classes
            .get(class.0 as usize)
            .ok_or(SectorError::UnknownClass(class.0))
    }
}
