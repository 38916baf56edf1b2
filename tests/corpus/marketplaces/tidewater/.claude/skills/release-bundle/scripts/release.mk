# Release bundle: make -f scripts/release.mk bundle VERSION=x.y.z [NAME=...]
NAME ?= $(notdir $(CURDIR))
DIST := dist
FILES := $(shell grep -v '^\#' ship.list | grep -v '^$$')

.PHONY: manifest bundle clean check-version

check-version:
	@test -n "$(VERSION)" || { echo "release.mk: VERSION is required (VERSION=x.y.z)" >&2; exit 2; }

manifest: check-version
	@mkdir -p $(DIST)
	@for f in $(FILES); do test -e "$$f" || { echo "release.mk: missing $$f" >&2; exit 1; }; done
	@printf '%s\n' $(FILES) > $(DIST)/MANIFEST
	@echo "manifest: $(words $(FILES)) files"

bundle: manifest
	@tar -czf $(DIST)/$(NAME)-$(VERSION).tar.gz -T $(DIST)/MANIFEST
	@cd $(DIST) && sha256sum $(NAME)-$(VERSION).tar.gz > SHA256SUMS
	@echo "bundle: $(DIST)/$(NAME)-$(VERSION).tar.gz"

clean:
	@rm -rf $(DIST)
