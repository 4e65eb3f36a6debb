//! Writes the catalog of senders and destinations as JSON to standard
//! output: `cargo run -p devtools --bin catalog > scripts/catalog.json`.

fn main() {
    print!("{}", devtools::catalog::catalog_json());
}
