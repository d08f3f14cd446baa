//! The Markdown report (GitHub-flavoured, blog-ready): draws the layout's blocks as headings,
//! lists and pipe tables (`comfy-table`'s `ASCII_MARKDOWN` preset plus alignment colons).
//!
//! Owns Markdown syntax and escaping only. It must not decide what is shown (that is
//! `layout`) and never emits colour.

use comfy_table::{CellAlignment, ContentArrangement, Table, presets::ASCII_MARKDOWN};

use super::super::doc::{Block, Grid};

pub fn render(doc: &[Block]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in doc {
        if matches!(block, Block::Figures { .. }) {
            continue;
        }
        parts.push(match block {
            Block::Title(t) => format!("# {}\n", escape(t)),
            Block::Heading(t) => format!("## {}\n", escape(t)),
            Block::SubHeading(t) => format!("### {}\n", escape(t)),
            Block::Para(p) => format!("{}\n", escape(p)),
            Block::Bullets(items) => items.iter().map(|i| format!("- {}\n", escape(i))).collect(),
            Block::Table(grid) => table(grid),
            Block::Figures { .. } => unreachable!("skipped above"),
        });
    }
    parts.join("\n")
}

/// Escapes characters Markdown would read as syntax. `#`, `>`, `+` and `-` matter only at the
/// start of a line; `_` is left alone between letters or digits (GitHub never reads it as
/// emphasis there), so step labels stay readable.
fn escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let intraword = |j: Option<&char>| j.is_some_and(|c| c.is_alphanumeric());
        let escape = match c {
            '\\' | '*' | '`' | '[' | ']' | '|' | '~' => true,
            '<' => chars
                .get(i + 1)
                .is_some_and(|n| n.is_alphabetic() || "/!?".contains(*n)),
            '#' | '>' | '+' | '-' => i == 0,
            '_' => !(i > 0 && intraword(chars.get(i - 1)) && intraword(chars.get(i + 1))),
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn table(grid: &Grid) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_MARKDOWN)
        .set_content_arrangement(ContentArrangement::Disabled)
        .force_no_tty();
    t.set_header(grid.header.iter().map(|h| escape(&h.replace('\n', " "))));
    for row in &grid.rows {
        t.add_row(row.iter().map(|c| escape(&c.text.replace('\n', " "))));
    }
    for (i, right) in grid.right.iter().enumerate() {
        if *right && let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = String::new();
    for (n, line) in t.lines().enumerate() {
        let line = line.trim_end();
        if n == 1 {
            out.push_str(&align_delimiters(line, &grid.right));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Turns the delimiter row `|-----|-----|` into `|-----|----:|` for right-aligned columns.
fn align_delimiters(line: &str, right: &[bool]) -> String {
    let inner = line.trim_start_matches('|').trim_end_matches('|');
    let cells: Vec<String> = inner
        .split('|')
        .enumerate()
        .map(|(i, dashes)| {
            if right.get(i).copied().unwrap_or(false) && dashes.len() > 1 {
                format!("{}:", &dashes[..dashes.len() - 1])
            } else {
                dashes.to_string()
            }
        })
        .collect();
    format!("|{}|", cells.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_syntax_but_keeps_step_labels() {
        assert_eq!(escape("read-only_range=10"), "read-only_range=10");
        assert_eq!(escape("< 1 is cheaper, > 1"), "< 1 is cheaper, > 1");
        assert_eq!(escape("<b>"), "\\<b>");
        assert_eq!(escape("# x"), "\\# x");
        assert_eq!(escape("a|b [cb] *x* _y_"), "a\\|b \\[cb\\] \\*x\\* \\_y\\_");
        assert_eq!(escape("~"), "\\~", "GitHub reads ~x~ as strikethrough");
    }

    #[test]
    fn delimiter_row_gets_alignment() {
        assert_eq!(
            align_delimiters("|------|-----|", &[false, true]),
            "|------|----:|"
        );
    }
}
