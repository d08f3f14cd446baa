//! The formats a report is drawn in, each from the same model and layout: text (`text`),
//! Markdown (`markdown`), CSV (`csv`), JSON (`json`), HTML (`html`), charts (`charts`: SVG
//! and PNG) and flame graphs (`flame`), with the cells and number formatting they share (`doc`,
//! `fmt`). Must not: compute what a report says (the model and `sections` do).

pub(super) mod charts;
pub mod csv;
pub(super) mod doc;
pub(super) mod flame;
pub mod fmt;
pub(super) mod html;
pub(super) mod json;
pub(super) mod markdown;
pub(super) mod text;
