"""Writers of formats that wqtool only reads: tests, fixture scripts and benches build logs with them."""
