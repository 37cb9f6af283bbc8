"""Small shared helpers: atomic writes, seeded random streams, devices, progress bars."""
