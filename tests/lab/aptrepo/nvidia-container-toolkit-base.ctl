Section: utils
Priority: optional
Standards-Version: 3.9.2
Package: nvidia-container-toolkit-base
Version: 1.18.0-1
Maintainer: metalserve.sglang tests <tests@metalserve.invalid>
Architecture: all
Depends: python3
Files: files/nvidia-ctk /usr/bin/
Description: STAND-IN for NVIDIA's nvidia-container-toolkit-base (tests only)
 Built by metalserve.sglang's tests with equivs; carries a small nvidia-ctk script
 that does what the collection calls. Not NVIDIA software.
