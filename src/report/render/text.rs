//! The terminal report: draws the layout's blocks as plain text with `comfy-table` tables,
//! optionally with ANSI colours on relative cells.
//!
//! Owns text-only presentation (underlined headings, wrapping, table style, colours). It must
//! not decide what is shown (that is `layout`), and must not look at the terminal or the
//! environment: the caller says whether to colour.

use comfy_table::{
    Attribute, Cell, CellAlignment, Color, ContentArrangement, ContentLineStyle, LineStyle, Table,
    TableStyle,
};

use super::super::doc::{Block, Grid, Tone};

/// Width paragraphs and bullets are wrapped to.
const WIDTH: usize = 100;

/// psql-like: `|` between columns, a dashed line under the header, no outer border.
const STYLE: TableStyle = TableStyle::new()
    .header_lines(ContentLineStyle::none().junction('|'))
    .header_separator(LineStyle::none().fill('-').junction('+'))
    .content_lines(ContentLineStyle::none().junction('|'));

pub fn render(doc: &[Block], color: bool) -> String {
    let mut out = String::new();
    let mut after_table = false;
    for block in doc {
        if matches!(block, Block::Figures { .. }) {
            continue;
        }
        if after_table && matches!(block, Block::Para(_) | Block::Bullets(_)) {
            out.push('\n');
        }
        after_table = matches!(block, Block::Table(_));
        match block {
            Block::Title(t) => {
                out.push_str(t);
                out.push('\n');
                out.push_str(&"=".repeat(t.chars().count()));
                out.push('\n');
            }
            Block::Heading(t) => {
                out.push('\n');
                out.push_str(t);
                out.push('\n');
                out.push_str(&"-".repeat(t.chars().count()));
                out.push('\n');
            }
            Block::SubHeading(t) => {
                out.push('\n');
                out.push_str(t);
                out.push('\n');
            }
            Block::Para(p) => {
                out.push_str(&wrap(p, "", ""));
            }
            Block::Bullets(items) => {
                for item in items {
                    out.push_str(&wrap(item, "- ", "  "));
                }
            }
            Block::Table(grid) => out.push_str(&table(grid, color)),
            Block::Figures { .. } => unreachable!("skipped above"),
        }
    }
    out
}

/// Greedy word wrap to [`WIDTH`], first line prefixed with `first`, the rest with `rest`.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let len = line.chars().count() + usize::from(!empty) + word.chars().count();
        if !empty && len > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

fn table(grid: &Grid, color: bool) -> String {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Disabled);
    if color {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    t.set_header(
        grid.header
            .iter()
            .map(|h| Cell::new(h).add_attribute(Attribute::Bold)),
    );
    for row in &grid.rows {
        t.add_row(row.iter().map(|c| {
            let cell = Cell::new(&c.text);
            match (color, c.tone) {
                (true, Tone::Better) => cell.fg(Color::Green),
                (true, Tone::Worse) => cell.fg(Color::Red),
                _ => cell,
            }
        }));
    }
    for (i, right) in grid.right.iter().enumerate() {
        if *right && let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
