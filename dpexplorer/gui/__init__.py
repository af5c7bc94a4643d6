"""Qt: main window, panels, plot views and the compute service. Displays and dispatches only;
the privacy math lives in dpexplorer.core."""

from dpexplorer.gui import pyside_scan

pyside_scan.install()  # before the window's imports: PySide6 reads each one's source otherwise
