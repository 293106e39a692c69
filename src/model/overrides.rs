//! `--set KEY=VALUE` overrides applied to the parsed TOML tree before deserialization.

use crate::Result;

/// Apply one `KEY=VALUE` override (`discretization.dx=0.5e-3`, `boundary.0.y=20`).
pub fn apply(tree: &mut toml::Table, assignment: &str) -> Result<()> {
    let _ = (tree, assignment);
    unimplemented!("overrides::apply")
}
