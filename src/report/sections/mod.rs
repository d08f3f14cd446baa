//! The report's sections that compute from the model and lay themselves out: the answer
//! (`answer`) and the first screen (`first_screen`), the settings a reader needs first
//! (`settings`), the by-version view (`by_version`), the concurrency crossover (`crossover`),
//! instructions per operation (`instructions`), why a counted step changed (`why`, with its
//! call trees, `call_tree`) and CPU profiles (`profile`). Must not: render a format (`render`
//! does) or judge a step (`verdicts` does).

pub(super) mod answer;
pub(super) mod by_version;
pub(super) mod call_tree;
pub(super) mod crossover;
pub(super) mod first_screen;
pub(super) mod instructions;
pub mod profile;
pub(super) mod settings;
pub(super) mod why;
