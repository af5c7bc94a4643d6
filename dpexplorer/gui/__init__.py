"""Qt: main window, panels, plot views and the compute service. Displays and dispatches only;
the privacy math lives in dpexplorer.core."""
