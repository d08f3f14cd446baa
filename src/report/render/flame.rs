//! Flame graphs as inferno draws them, for every kind a report has (the CPU profiles'
//! sampled stacks in `profile`, the instruction call trees of `call_tree`): folded stacks
//! whose values are per operation made integer counts of a [`Unit`], the options they share,
//! and the plain and differential SVGs.
//!
//! A differential graph is drawn in one of two shapes, both coloured by target − base (red:
//! the target spends more there, blue: less): the target's widths (code the target no longer
//! runs has no frame), or the base's (code the target added has none).
//! Must not: read the model or files, or choose which graphs a report has.

/// The unit a flame graph counts in: values per operation times `per`, named `name`.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    pub per: f64,
    pub name: &'static str,
}

/// CPU µs per operation, counted in ns per 1000 operations.
pub const CPU: Unit = Unit {
    per: 1e6,
    name: "ns per 1000 ops",
};

/// Instructions per operation, counted per 1000 operations.
pub const INSTRUCTIONS: Unit = Unit {
    per: 1e3,
    name: "instructions per 1000 ops",
};

/// Folded stacks with their values per operation (`a;b;c`, value).
pub type Stacks = [(String, f64)];

/// A flame graph's title and the line under it.
#[derive(Debug, Clone)]
pub struct Title {
    pub text: String,
    pub sub: Option<String>,
}

impl From<String> for Title {
    fn from(text: String) -> Title {
        Title { text, sub: None }
    }
}

/// Whose widths a differential flame graph has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Target,
    Base,
}

/// Stacks as folded text with integer counts in `unit`.
pub fn folded(stacks: &Stacks, unit: Unit) -> String {
    let mut out = String::new();
    let mut total: u64 = 0;
    for (s, v) in stacks {
        let n = (v * unit.per).round() as u64;
        // inferno adds the counts up in a usize: a stack that would overflow the sum (only a
        // damaged store's values come near) is left out, not drawn as a panic.
        match total.checked_add(n).filter(|t| usize::try_from(*t).is_ok()) {
            Some(t) if n > 0 => {
                total = t;
                out.push_str(&format!("{s} {n}\n"));
            }
            _ => {}
        }
    }
    out
}

/// A flame graph of `stacks` as an SVG document (interactive: inferno's zoom and search).
pub fn plain(stacks: &Stacks, unit: Unit, title: Title) -> Result<String, String> {
    let folded = folded(stacks, unit);
    render(&mut options(title, unit, true), folded.lines())
}

/// The differential flame graph of `target` against `base`, in `shape`; `interactive` keeps
/// inferno's script for a standalone file (the HTML report embeds graphs without it).
pub fn diff(
    (base, target): (&Stacks, &Stacks),
    unit: Unit,
    shape: Shape,
    (title, interactive): (Title, bool),
) -> Result<String, String> {
    let mut opt = options(title, unit, interactive);
    // inferno draws the second profile's widths coloured by second − first; the base's shape
    // swaps the two and negates the colours back to target − base.
    let text = match shape {
        Shape::Target => diff_folded(base, target, unit)?,
        Shape::Base => {
            opt.negate_differentials = true;
            diff_folded(target, base, unit)?
        }
    };
    render(&mut opt, text.lines())
}

/// `stack first_count second_count` lines (inferno's differential folded format).
pub fn diff_folded(first: &Stacks, second: &Stacks, unit: Unit) -> Result<String, String> {
    let (a, b) = (folded(first, unit), folded(second, unit));
    let mut out = Vec::new();
    let opt = inferno::differential::Options {
        normalize: false,
        strip_hex: false,
    };
    inferno::differential::from_readers(opt, a.as_bytes(), b.as_bytes(), &mut out)
        .map_err(|e| format!("differential folding failed: {e}"))?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

fn options(title: Title, unit: Unit, interactive: bool) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.text;
    o.subtitle = title.sub;
    o.count_name = unit.name.into();
    o.no_javascript = !interactive;
    o.deterministic = true;
    o.hash = true;
    o.min_width = 0.5;
    o
}

fn render<'a>(
    opt: &mut inferno::flamegraph::Options<'_>,
    lines: impl IntoIterator<Item = &'a str>,
) -> Result<String, String> {
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(opt, lines, &mut out)
        .map_err(|e| format!("drawing the flame graph failed: {e}"))?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(v: &[(&str, f64)]) -> Vec<(String, f64)> {
        v.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    #[test]
    fn each_shape_draws_its_sides_widths_coloured_by_target_minus_base() {
        let base = stacks(&[("main;old", 2.0), ("main;kept", 1.0)]);
        let target = stacks(&[("main;new", 3.0), ("main;kept", 1.0)]);
        let draw = |shape| {
            diff(
                (&base, &target),
                INSTRUCTIONS,
                shape,
                (String::from("t").into(), false),
            )
            .unwrap()
        };
        let (t, b) = (draw(Shape::Target), draw(Shape::Base));
        // The target's shape has the added function, the base's the removed one.
        assert!(t.contains(">new (") && !t.contains(">old ("), "{t}");
        assert!(b.contains(">old (") && !b.contains(">new ("), "{b}");
        // Both say target − base: +3,000 for `new` (of 4,000), −2,000 for `old` (of 3,000).
        assert!(
            t.contains("new (3,000 instructions per 1000 ops, 75.00%; +75.00%)"),
            "{t}"
        );
        assert!(
            b.contains("old (2,000 instructions per 1000 ops, 66.67%; -66.67%)"),
            "{b}"
        );
    }
}
