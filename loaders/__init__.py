"""One package per external source: discover → fetch → parse → normalize → publish."""
