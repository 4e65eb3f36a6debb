//! Prints the catalog `make deploy` reads (`shared::catalog`):
//! `cargo run -p shared --bin catalog > .tools/catalog.json`.

fn main() {
    print!("{}", shared::catalog::catalog_json());
}
