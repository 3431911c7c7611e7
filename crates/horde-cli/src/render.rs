//! Pictures of every layer: terrain, integration, flow arrows, goals, paths, dungeon tiles and
//! units, composed on one canvas, written as PNG or as GIF frames. Built on `tiny-skia`
//! (antialiased arrows, lines and discs), `png`, `gif`, and the `font8x8` bitmap font for legends.

use anyhow::{Context, Result, bail};
use glam::{UVec2, Vec2};
use horde::{CostField, Dir8, FlowField, IntegrationField, UNREACHABLE, WALL};
use tiny_skia::{
    Color, FillRule, LineCap, Paint, PathBuilder, Pixmap, PremultipliedColorU8, Stroke, Transform,
};

/// Colour of walls.
pub const WALL_RGB: [u8; 3] = [34, 36, 44];
/// Colour of plain ground (cost 1).
pub const GROUND_RGB: [u8; 3] = [232, 230, 220];
/// Colour of cells that cannot reach the goal.
pub const UNREACHABLE_RGB: [u8; 3] = [150, 70, 160];
/// Colour of goals.
pub const GOAL_RGB: [u8; 3] = [230, 30, 40];
/// Colour of paths.
pub const PATH_RGB: [u8; 3] = [20, 110, 240];
/// Colour of arrows.
pub const ARROW_RGB: [u8; 3] = [20, 22, 28];
/// Colour of units, by state: moving, arrived, no path, stuck.
pub const UNIT_RGB: [[u8; 3]; 4] = [[255, 255, 255], [40, 200, 90], [230, 40, 40], [250, 160, 0]];

/// Costlier terrain shades from green (2) to red (254), on a log scale since low costs are common.
pub fn terrain_rgb(cost: u8) -> [u8; 3] {
    match cost {
        WALL => WALL_RGB,
        1 => GROUND_RGB,
        c => {
            let t = ((c - 1) as f32).ln() / 253f32.ln();
            lerp([120, 200, 90], [215, 50, 40], t)
        }
    }
}

fn lerp(a: [u8; 3], b: [u8; 3], t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    [0, 1, 2].map(|i| (a[i] as f32 + (b[i] as f32 - a[i] as f32) * t).round() as u8)
}

/// A perceptual colour map (viridis, sampled at nine points): dark purple near the goal, yellow
/// far away.
pub fn viridis(t: f32) -> [u8; 3] {
    const STOPS: [[u8; 3]; 9] = [
        [68, 1, 84],
        [71, 44, 122],
        [59, 81, 139],
        [44, 113, 142],
        [33, 144, 141],
        [39, 173, 129],
        [92, 200, 99],
        [170, 220, 50],
        [253, 231, 37],
    ];
    let x = t.clamp(0.0, 1.0) * 8.0;
    let i = (x.floor() as usize).min(7);
    lerp(STOPS[i], STOPS[i + 1], x - i as f32)
}

/// A picture of a map, `scale` pixels per cell.
pub struct Canvas {
    pixmap: Pixmap,
    scale: u32,
    cells: UVec2,
}

fn color(rgb: [u8; 3], alpha: u8) -> Color {
    Color::from_rgba8(rgb[0], rgb[1], rgb[2], alpha)
}

impl Canvas {
    /// A canvas for a `width × height` cell map. Refuses pictures above 16k pixels a side.
    pub fn new(width: u32, height: u32, scale: u32) -> Result<Canvas> {
        let scale = scale.max(1);
        let (pw, ph) = (width as u64 * scale as u64, height as u64 * scale as u64);
        if pw > 16384 || ph > 16384 {
            bail!("a picture of {pw}x{ph} pixels is too large: lower --scale");
        }
        let pixmap = Pixmap::new(pw as u32, ph as u32).context("empty picture")?;
        Ok(Canvas {
            pixmap,
            scale,
            cells: UVec2::new(width, height),
        })
    }

    /// A scale that makes the picture about `target` pixels on its longer side (at least 1).
    pub fn auto_scale(width: u32, height: u32, target: u32) -> u32 {
        (target / width.max(height).max(1)).clamp(1, 32)
    }

    /// Pixels per cell.
    pub fn scale(&self) -> u32 {
        self.scale
    }
    /// Picture width in pixels.
    pub fn width(&self) -> u32 {
        self.pixmap.width()
    }
    /// Picture height in pixels.
    pub fn height(&self) -> u32 {
        self.pixmap.height()
    }

    /// Fill every cell with the colour `f` gives it (`None` leaves the cell as it is). Writes the
    /// pixels directly: a 1024 × 1024 map at 1 px per cell takes a few milliseconds.
    pub fn fill_cells(&mut self, mut f: impl FnMut(usize) -> Option<[u8; 3]>) {
        let (w, s) = (self.cells.x as usize, self.scale as usize);
        let pw = self.pixmap.width() as usize;
        let pixels = self.pixmap.pixels_mut();
        for cy in 0..self.cells.y as usize {
            for cx in 0..w {
                let Some(rgb) = f(cy * w + cx) else { continue };
                let p = PremultipliedColorU8::from_rgba(rgb[0], rgb[1], rgb[2], 255)
                    .expect("opaque colours are valid");
                for py in cy * s..(cy + 1) * s {
                    pixels[py * pw + cx * s..py * pw + (cx + 1) * s].fill(p);
                }
            }
        }
    }

    /// Terrain: walls dark, plain ground light, costlier terrain from green to red.
    pub fn terrain(&mut self, cost: &CostField) {
        let costs = cost.costs();
        self.fill_cells(|i| Some(terrain_rgb(costs[i])));
    }

    /// The integration field as a perceptual colour map (walls left as they are; unreachable
    /// cells purple). Returns the largest value drawn.
    pub fn integration(&mut self, cost: &CostField, field: &IntegrationField) -> f64 {
        let values = field.values();
        let max = values
            .iter()
            .filter(|&&v| v != UNREACHABLE)
            .max()
            .copied()
            .unwrap_or(1)
            .max(1);
        let costs = cost.costs();
        self.fill_cells(|i| {
            if costs[i] == WALL {
                None
            } else if values[i] == UNREACHABLE {
                Some(UNREACHABLE_RGB)
            } else {
                let v = viridis(values[i] as f32 / max as f32);
                // Costly terrain shows through as a tint, so patches stay visible.
                Some(if costs[i] > 1 {
                    lerp(v, terrain_rgb(costs[i]), 0.45)
                } else {
                    v
                })
            }
        });
        field.model().to_cost(max)
    }

    /// The block size that keeps arrows at least `min_px` long.
    pub fn arrow_block(&self, min_px: u32) -> u32 {
        min_px.div_ceil(self.scale).max(1)
    }

    /// One arrow per `block × block` cells, taken from the block's centre cell (or the first cell
    /// of the block with an arrow).
    pub fn flow(&mut self, flow: &FlowField, block: u32) {
        self.arrows(|c| flow.dir(c), block);
    }

    /// One arrow per `block × block` cells from any source of directions (`None`: no arrow).
    pub fn arrows(&mut self, dir_at: impl Fn(UVec2) -> Option<Dir8>, block: u32) {
        let block = block.max(1);
        let s = self.scale as f32;
        let len = 0.8 * block as f32 * s;
        let width = (block as f32 * s / 9.0).clamp(0.8, 4.0);
        let mut pb = PathBuilder::new();
        let (w, h) = (self.cells.x, self.cells.y);
        for by in (0..h).step_by(block as usize) {
            for bx in (0..w).step_by(block as usize) {
                let bw = block.min(w - bx);
                let bh = block.min(h - by);
                let centre = UVec2::new(bx + bw / 2, by + bh / 2);
                let dir = dir_at(centre).or_else(|| {
                    (by..by + bh)
                        .flat_map(|y| (bx..bx + bw).map(move |x| UVec2::new(x, y)))
                        .find_map(&dir_at)
                });
                let Some(dir) = dir else { continue };
                let mid = Vec2::new(bx as f32 + bw as f32 / 2.0, by as f32 + bh as f32 / 2.0) * s;
                arrow(&mut pb, mid, dir, len);
            }
        }
        let Some(path) = pb.finish() else { return };
        let mut paint = Paint::default();
        paint.set_color(color(ARROW_RGB, 220));
        paint.anti_alias = true;
        let stroke = Stroke {
            width,
            line_cap: LineCap::Round,
            ..Stroke::default()
        };
        self.pixmap
            .stroke_path(&path, &paint, &stroke, Transform::identity(), None);
    }

    /// Lines along the borders of square sectors of `side` cells.
    pub fn sector_lines(&mut self, side: u32, rgb: [u8; 3]) {
        let s = self.scale as f32;
        let (w, h) = (self.cells.x, self.cells.y);
        let mut pb = PathBuilder::new();
        for x in (side..w).step_by(side.max(1) as usize) {
            pb.move_to(x as f32 * s, 0.0);
            pb.line_to(x as f32 * s, h as f32 * s);
        }
        for y in (side..h).step_by(side.max(1) as usize) {
            pb.move_to(0.0, y as f32 * s);
            pb.line_to(w as f32 * s, y as f32 * s);
        }
        let Some(path) = pb.finish() else { return };
        let mut paint = Paint::default();
        paint.set_color(color(rgb, 200));
        let stroke = Stroke {
            width: (s / 6.0).clamp(1.0, 3.0),
            ..Stroke::default()
        };
        self.pixmap
            .stroke_path(&path, &paint, &stroke, Transform::identity(), None);
    }

    /// A disc at a world position in cell units.
    pub fn disc(&mut self, at: Vec2, radius_cells: f32, rgb: [u8; 3], outline: bool) {
        let s = self.scale as f32;
        let r = (radius_cells * s).max(1.0);
        let Some(path) = PathBuilder::from_circle(at.x * s, at.y * s, r) else {
            return;
        };
        let mut paint = Paint::default();
        paint.set_color(color(rgb, 255));
        paint.anti_alias = true;
        self.pixmap.fill_path(
            &path,
            &paint,
            FillRule::Winding,
            Transform::identity(),
            None,
        );
        if outline && r >= 3.0 {
            paint.set_color(color([0, 0, 0], 200));
            let stroke = Stroke {
                width: (r / 5.0).clamp(1.0, 3.0),
                ..Stroke::default()
            };
            self.pixmap
                .stroke_path(&path, &paint, &stroke, Transform::identity(), None);
        }
    }

    /// Goal cells as red discs with an outline.
    pub fn goals(&mut self, goals: &[UVec2]) {
        // At least 5 pixels across, whatever the scale.
        let r = (5.0 / self.scale as f32).max(0.45);
        for g in goals {
            self.disc(g.as_vec2() + 0.5, r, GOAL_RGB, true);
        }
    }

    /// A path through cell centres.
    pub fn path(&mut self, cells: &[UVec2]) {
        let s = self.scale as f32;
        let mut pb = PathBuilder::new();
        for (k, c) in cells.iter().enumerate() {
            let p = (c.as_vec2() + 0.5) * s;
            if k == 0 {
                pb.move_to(p.x, p.y);
            } else {
                pb.line_to(p.x, p.y);
            }
        }
        if cells.len() == 1 {
            let p = (cells[0].as_vec2() + 0.5) * s;
            pb.line_to(p.x + 0.01, p.y);
        }
        let Some(path) = pb.finish() else { return };
        let mut paint = Paint::default();
        paint.set_color(color(PATH_RGB, 235));
        paint.anti_alias = true;
        let stroke = Stroke {
            width: (s * 0.35).max(1.5),
            line_cap: LineCap::Round,
            line_join: tiny_skia::LineJoin::Round,
            ..Stroke::default()
        };
        self.pixmap
            .stroke_path(&path, &paint, &stroke, Transform::identity(), None);
    }

    /// Text in the 8 × 8 bitmap font, `size` pixels per font pixel, at a pixel position.
    pub fn text(&mut self, at: (u32, u32), size: u32, rgb: [u8; 3], text: &str) {
        use font8x8::UnicodeFonts;
        let p = PremultipliedColorU8::from_rgba(rgb[0], rgb[1], rgb[2], 255).expect("opaque");
        let (pw, ph) = (self.pixmap.width(), self.pixmap.height());
        let pixels = self.pixmap.pixels_mut();
        for (k, ch) in text.chars().enumerate() {
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::LATIN_FONTS.get(ch))
                .unwrap_or([0; 8]);
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..8 {
                    if bits >> gx & 1 == 0 {
                        continue;
                    }
                    for dy in 0..size {
                        for dx in 0..size {
                            let x = at.0 + (k as u32 * 8 + gx) * size + dx;
                            let y = at.1 + gy as u32 * size + dy;
                            if x < pw && y < ph {
                                pixels[(y * pw + x) as usize] = p;
                            }
                        }
                    }
                }
            }
        }
    }

    /// A legend in the top-left corner: a swatch and a line of text per entry, on a dark box.
    pub fn legend(&mut self, entries: &[LegendEntry]) {
        if entries.is_empty() {
            return;
        }
        let size = if self.width() >= 600 { 2 } else { 1 };
        let line = 10 * size;
        let chars = entries
            .iter()
            .map(|(_, t)| t.chars().count())
            .max()
            .unwrap_or(0) as u32;
        let (bw, bh) = ((chars + 3) * 8 * size + 8, entries.len() as u32 * line + 8);
        if bw > self.width() || bh > self.height() {
            return;
        }
        let background = PremultipliedColorU8::from_rgba(0, 0, 0, 255).expect("opaque");
        let pw = self.pixmap.width();
        for y in 0..bh {
            for x in 0..bw {
                let px = &mut self.pixmap.pixels_mut()[(y * pw + x) as usize];
                *px = blend(*px, background, 170);
            }
        }
        for (k, (rgb, text)) in entries.iter().enumerate() {
            let y = 4 + k as u32 * line;
            for sy in 0..8 * size {
                for sx in 0..8 * size {
                    let p = PremultipliedColorU8::from_rgba(rgb[0], rgb[1], rgb[2], 255)
                        .expect("opaque");
                    self.pixmap.pixels_mut()[((y + sy) * pw + 4 + sx) as usize] = p;
                }
            }
            self.text((4 + 12 * size, y), size, [240, 240, 240], text);
        }
    }

    /// The picture as straight (not premultiplied) RGBA bytes.
    pub fn rgba(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.pixmap.data().len());
        for p in self.pixmap.pixels() {
            let c = p.demultiply();
            out.extend_from_slice(&[c.red(), c.green(), c.blue(), c.alpha()]);
        }
        out
    }

    /// Write the picture as a PNG.
    pub fn save_png(&self, path: &str) -> Result<()> {
        let mut file = crate::util::AtomicFile::create(path)?;
        {
            let out = std::io::BufWriter::new(file.writer());
            let mut enc = png::Encoder::new(out, self.width(), self.height());
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Fast);
            let mut writer = enc
                .write_header()
                .with_context(|| format!("cannot write {path}"))?;
            writer
                .write_image_data(&self.rgba())
                .with_context(|| format!("cannot write {path}"))?;
            writer
                .finish()
                .with_context(|| format!("cannot write {path}"))?;
        }
        file.commit()
    }
}

fn blend(
    under: PremultipliedColorU8,
    over: PremultipliedColorU8,
    alpha: u8,
) -> PremultipliedColorU8 {
    let a = alpha as u32;
    let mix = |u: u8, o: u8| ((o as u32 * a + u as u32 * (255 - a)) / 255) as u8;
    PremultipliedColorU8::from_rgba(
        mix(under.red(), over.red()),
        mix(under.green(), over.green()),
        mix(under.blue(), over.blue()),
        255,
    )
    .expect("opaque")
}

/// An arrow centred at `mid`, `len` long, pointing along `dir`.
fn arrow(pb: &mut PathBuilder, mid: Vec2, dir: Dir8, len: f32) {
    let d = dir.vec2();
    let tail = mid - d * len * 0.5;
    let tip = mid + d * len * 0.5;
    pb.move_to(tail.x, tail.y);
    pb.line_to(tip.x, tip.y);
    let head = len * 0.35;
    for side in [0.6f32, -0.6] {
        let (s, c) = side.sin_cos();
        let back = Vec2::new(-d.x * c + d.y * s, -d.x * s - d.y * c);
        let p = tip + back * head;
        pb.move_to(tip.x, tip.y);
        pb.line_to(p.x, p.y);
    }
}

/// A palette for GIFs: exact entries for the colours pictures use most, then a 6 × 6 × 6 cube.
pub struct Palette {
    rgb: Vec<u8>,
    specials: Vec<[u8; 3]>,
}

impl Palette {
    /// The fixed palette, with `specials` (at most 40) matched exactly.
    pub fn new(specials: &[[u8; 3]]) -> Palette {
        let specials: Vec<[u8; 3]> = specials.iter().take(40).copied().collect();
        let mut rgb = Vec::with_capacity(256 * 3);
        for r in 0..6u32 {
            for g in 0..6u32 {
                for b in 0..6u32 {
                    rgb.extend([r, g, b].map(|v| (v * 51) as u8));
                }
            }
        }
        for s in &specials {
            rgb.extend_from_slice(s);
        }
        Palette { rgb, specials }
    }
    /// Palette bytes (RGB triples) for the GIF header.
    pub fn bytes(&self) -> &[u8] {
        &self.rgb
    }
    /// The palette index of a colour: exact for specials, nearest cube colour otherwise.
    pub fn index(&self, rgb: [u8; 3]) -> u8 {
        if let Some(k) = self.specials.iter().position(|s| *s == rgb) {
            return (216 + k) as u8;
        }
        let q = |v: u8| ((v as u32 + 25) / 51) as u8;
        q(rgb[0]) * 36 + q(rgb[1]) * 6 + q(rgb[2])
    }
    /// A whole RGBA picture as palette indices.
    pub fn quantize(&self, rgba: &[u8]) -> Vec<u8> {
        rgba.chunks_exact(4)
            .map(|p| self.index([p[0], p[1], p[2]]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_maps_run_from_end_to_end() {
        assert_eq!(viridis(0.0), [68, 1, 84]);
        assert_eq!(viridis(1.0), [253, 231, 37]);
        assert_eq!(terrain_rgb(1), GROUND_RGB);
        assert_eq!(terrain_rgb(255), WALL_RGB);
        assert_eq!(terrain_rgb(254), [215, 50, 40]);
        let p = Palette::new(&[WALL_RGB, GOAL_RGB]);
        assert_eq!(p.index(GOAL_RGB), 217);
        assert_eq!(p.index([255, 255, 255]), 215);
        assert_eq!(p.bytes().len(), 218 * 3);
    }

    #[test]
    fn arrows_point_the_right_way_from_the_cell_centre() {
        // One cell pointing E at 20 px per cell: the arrow's ink lies right of the centre line's
        // middle as much as left (it is centred), but the head is on the east side.
        let cost = CostField::new(horde::Grid::new(3, 1).unwrap());
        let mut b = horde::IntegrationBuilder::new();
        b.build(&cost, &[UVec2::new(2, 0)], horde::CostModel::TenFourteen)
            .unwrap();
        let mut flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flow).unwrap();
        let mut c = Canvas::new(3, 1, 20).unwrap();
        c.fill_cells(|_| Some([255, 255, 255]));
        c.flow(&flow, 1);
        let rgba = c.rgba();
        let dark = |x: u32, y: u32| rgba[((y * 60 + x) * 4) as usize] < 128;
        // Cell 0 spans x 0..20: its head's barbs reach above and below the line near x ≈ 15,
        // not near x ≈ 5.
        let barbs_east = (12..18).any(|x| dark(x, 6) || dark(x, 14));
        let barbs_west = (2..8).any(|x| dark(x, 6) || dark(x, 14));
        assert!(barbs_east && !barbs_west);
        assert!(dark(10, 10), "the shaft crosses the centre");
    }
}

/// A legend line: a colour swatch and its text.
pub type LegendEntry = ([u8; 3], String);

/// The layers a still picture of a field can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layer {
    /// Walls, ground and terrain costs.
    Terrain,
    /// Cost-to-goal as a colour map.
    Integration,
    /// One arrow per cell (or per block on big maps).
    Flow,
    /// The goal cells.
    Goals,
}

/// A picture of a map and its fields, and the legend entries for what it shows (draw anything
/// else, then [`Canvas::legend`] last so that it stays on top).
pub fn field_picture(
    cost: &CostField,
    integration: &IntegrationField,
    flow: &FlowField,
    goals: &[UVec2],
    layers: &[Layer],
    scale: u32,
) -> Result<(Canvas, Vec<LegendEntry>)> {
    let mut c = Canvas::new(cost.width(), cost.height(), scale)?;
    let mut legend = Vec::new();
    if layers.contains(&Layer::Terrain) {
        c.terrain(cost);
        legend.push((WALL_RGB, "wall".to_owned()));
        legend.push((GROUND_RGB, "ground (cost 1)".to_owned()));
        if cost.costs().iter().any(|&t| t != 1 && t != WALL) {
            legend.push((terrain_rgb(2), "terrain 2 ... 254".to_owned()));
        }
    } else {
        c.fill_cells(|i| (cost.costs()[i] == WALL).then_some(WALL_RGB));
    }
    if layers.contains(&Layer::Integration) {
        let max = c.integration(cost, integration);
        legend.push((viridis(0.0), "cost-to-goal 0".to_owned()));
        legend.push((viridis(1.0), format!("cost-to-goal {max}")));
        if integration
            .values()
            .iter()
            .zip(cost.costs())
            .any(|(&v, &t)| v == UNREACHABLE && t != WALL)
        {
            legend.push((UNREACHABLE_RGB, "cannot reach goal".to_owned()));
        }
    }
    if layers.contains(&Layer::Flow) {
        let block = c.arrow_block(8);
        c.flow(flow, block);
        legend.push((
            ARROW_RGB,
            if block == 1 {
                "flow: 1 arrow per cell".to_owned()
            } else {
                format!("flow: 1 arrow per {block}x{block} cells")
            },
        ));
    }
    if layers.contains(&Layer::Goals) {
        c.goals(goals);
        legend.push((GOAL_RGB, "goal".to_owned()));
    }
    legend.push(([128, 128, 128], format!("1 cell = {} px", c.scale())));
    Ok((c, legend))
}

/// Writes an animated GIF frame by frame: each frame is stored as the difference from the one
/// before (unchanged pixels transparent), so moving dots over a still map stay small.
pub struct GifWriter {
    encoder: gif::Encoder<std::io::BufWriter<std::fs::File>>,
    /// The file the encoder writes, renamed into place by [`GifWriter::finish`].
    file: crate::util::AtomicFile,
    palette: Palette,
    previous: Option<Vec<u8>>,
    width: u16,
    height: u16,
    delay: u16,
    frames: usize,
}

/// The palette index left free for "unchanged" pixels.
const TRANSPARENT: u8 = 255;

impl GifWriter {
    /// Start a GIF of `width × height` pixels at `fps` frames per second.
    pub fn create(
        path: &str,
        width: u32,
        height: u32,
        fps: u32,
        palette: Palette,
    ) -> Result<GifWriter> {
        let (w, h) = (
            u16::try_from(width).context("GIF wider than 65535 pixels")?,
            u16::try_from(height).context("GIF taller than 65535 pixels")?,
        );
        let mut file = crate::util::AtomicFile::create(path)?;
        let handle = file
            .writer()
            .try_clone()
            .with_context(|| format!("cannot write {path}"))?;
        let mut colours = palette.bytes().to_vec();
        colours.resize(256 * 3, 0);
        let mut encoder = gif::Encoder::new(std::io::BufWriter::new(handle), w, h, &colours)
            .with_context(|| format!("cannot write {path}"))?;
        encoder.set_repeat(gif::Repeat::Infinite)?;
        Ok(GifWriter {
            encoder,
            file,
            palette,
            previous: None,
            width: w,
            height: h,
            delay: (100 / fps.clamp(1, 100)) as u16,
            frames: 0,
        })
    }

    /// The palette frames are drawn in.
    pub fn palette(&self) -> &Palette {
        &self.palette
    }

    /// Add a frame given as palette indices (`width × height` of them).
    pub fn frame(&mut self, indices: &[u8]) -> Result<()> {
        let buffer: Vec<u8> = match &self.previous {
            None => indices.to_vec(),
            Some(prev) => indices
                .iter()
                .zip(prev)
                .map(|(&c, &p)| if c == p { TRANSPARENT } else { c })
                .collect(),
        };
        let frame = gif::Frame {
            width: self.width,
            height: self.height,
            delay: self.delay,
            dispose: gif::DisposalMethod::Keep,
            transparent: self.previous.as_ref().map(|_| TRANSPARENT),
            buffer: std::borrow::Cow::Owned(buffer),
            ..gif::Frame::default()
        };
        self.encoder.write_frame(&frame)?;
        self.previous = Some(indices.to_vec());
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Close the GIF (its trailer) and move it into place.
    pub fn finish(self) -> Result<()> {
        let GifWriter { encoder, file, .. } = self;
        let path = file.path().to_owned();
        let mut out = encoder
            .into_inner()
            .with_context(|| format!("cannot write {path}"))?;
        std::io::Write::flush(&mut out).with_context(|| format!("cannot write {path}"))?;
        drop(out);
        file.commit()
    }
}

/// Draw a filled disc of palette index `colour` into an indexed picture.
pub fn indexed_disc(pixels: &mut [u8], width: u32, centre: Vec2, radius: f32, colour: u8) {
    let height = pixels.len() as u32 / width;
    let r2 = radius * radius;
    let x0 = (centre.x - radius).floor().max(0.0) as u32;
    let y0 = (centre.y - radius).floor().max(0.0) as u32;
    let x1 = ((centre.x + radius).ceil() as u32).min(width.saturating_sub(1));
    let y1 = ((centre.y + radius).ceil() as u32).min(height.saturating_sub(1));
    for y in y0..=y1 {
        for x in x0..=x1 {
            let d = Vec2::new(x as f32 + 0.5, y as f32 + 0.5) - centre;
            if d.length_squared() <= r2 {
                pixels[(y * width + x) as usize] = colour;
            }
        }
    }
}
