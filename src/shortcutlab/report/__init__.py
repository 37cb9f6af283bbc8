"""Self-contained HTML reports: a small page builder (:mod:`.html`) and the DiagViB-6 report
(:mod:`.diagvib_figures`, :mod:`.diagvib_report`) that the other areas add sections to."""
