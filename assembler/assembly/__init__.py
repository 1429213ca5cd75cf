"""Assembly: services, then the resource snapshot, then tools and prompt, then the
runner (DESIGN.md section 3). `assembler.build.build_agent` is the front door."""
