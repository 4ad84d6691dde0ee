Section: utils
Priority: optional
Standards-Version: 3.9.2
Package: nvidia-container-toolkit
Version: 1.18.0-1
Maintainer: metalserve.sglang tests <tests@metalserve.invalid>
Architecture: all
Depends: nvidia-container-toolkit-base (= 1.18.0-1)
Description: STAND-IN for NVIDIA's nvidia-container-toolkit (tests only)
 Built by metalserve.sglang's tests with equivs. Not NVIDIA software.
